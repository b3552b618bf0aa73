// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"github.com/spf13/cobra"
)

// destFlags are how watch may reach a destination over the network.
type destFlags struct {
	allowCleartext bool   // --allow-cleartext
	caFile         string // --output-ca-file
}

func (d *destFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&d.allowCleartext, "allow-cleartext", false, "send --output otlp://, syslog:// or syslog+udp:// unencrypted (refused by default: whoever holds the port, any user of the node on loopback, gets every command line; never with OTLP headers)")
	cmd.Flags().StringVar(&d.caFile, "output-ca-file", "", "otlps:// and syslog+tls://: trust only the CA certificates in FILE (PEM) for the server, instead of the system's")
}
