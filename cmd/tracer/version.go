// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionedDeps are the modules whose versions decide what tracer can
// do on a node: the eBPF loader and the audit client.
var versionedDeps = []struct{ path, name string }{
	{"github.com/cilium/ebpf", "cilium/ebpf"},
	{"github.com/elastic/go-libaudit/v2", "go-libaudit"},
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print tracer's version, its Go version, and its cilium/ebpf and go-libaudit versions",
		Example: `  tracer version
  tracer --version`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), versionText())
			return err
		},
	}
}

// versionText is `tracer version`'s output, from the build's own record.
func versionText() string {
	s := fmt.Sprintf("tracer %s\ngo %s %s/%s\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	info, ok := debug.ReadBuildInfo()
	for _, d := range versionedDeps {
		v := "unknown"
		if ok {
			for _, m := range info.Deps {
				if m.Path == d.path {
					v = m.Version
					if m.Replace != nil {
						v += " (replaced by " + m.Replace.Path + " " + m.Replace.Version + ")"
					}
				}
			}
		}
		s += fmt.Sprintf("%s %s\n", d.name, v)
	}
	return s
}
