// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"errors"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/tracer/kube"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// kubeFlags are watch's --kubernetes and --cri-socket: pod fields from
// the node's container runtime.
type kubeFlags struct {
	mode   string
	socket string
}

func (f *kubeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.mode, "kubernetes", "auto",
		"add pod, pod_namespace, pod_uid, container_name and image to events of a Kubernetes pod's containers, from the container runtime's CRI socket: auto (when a socket is found), on (fail without one), off")
	cmd.Flags().StringVar(&f.socket, "cri-socket", "",
		"the container runtime's CRI socket (default: the first of "+strings.Join(kube.DefaultSockets, ", ")+")")
	_ = cmd.RegisterFlagCompletionFunc("kubernetes", completeOne("auto", "on", "off"))
}

// check refuses what the user can fix before anything starts.
func (f *kubeFlags) check() error {
	switch f.mode {
	case "auto", "on":
	case "off":
		if f.socket != "" {
			return vocab.Usagef("--cri-socket is for --kubernetes auto or on: drop one of them")
		}
	default:
		return vocab.Usagef("unknown --kubernetes %q: use auto, on or off", f.mode)
	}
	return nil
}

// open returns the enricher, or nil where there is none to be: --kubernetes
// off, or auto on a node without a runtime socket (said in one line).
// A socket that --kubernetes on or --cri-socket asks for and that is not
// there is the user's to fix.
func (f *kubeFlags) open() (*kube.Enricher, error) {
	if f.mode == "off" {
		return nil, nil
	}
	sock := f.socket
	if sock == "" {
		var err error
		if sock, err = kube.FindSocket(); err != nil {
			if f.mode == "on" {
				return nil, vocab.Usagef("--kubernetes on: %v: give the runtime's socket with --cri-socket, or mount it (deploy/kubernetes)", err)
			}
			logNoRuntime(err)
			return nil, nil
		}
	}
	e, err := kube.New(kube.Options{Socket: sock})
	if err != nil {
		if errors.Is(err, kube.ErrNoRuntime) {
			return nil, vocab.Usagef("--cri-socket %s: %v: give the socket of containerd or CRI-O, or --kubernetes off", sock, err)
		}
		return nil, err
	}
	slog.Debug("pod fields from the container runtime", "socket", sock)
	return e, nil
}

// logNoRuntime says that events carry no pod fields: at info on a node
// (or in a pod) of Kubernetes, where a socket was expected (a DaemonSet
// that does not mount it), at debug elsewhere, where none is.
func logNoRuntime(err error) {
	_, statErr := os.Stat("/var/lib/kubelet")
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" || statErr == nil {
		slog.Info("events carry no pod fields: mount the runtime's socket or give --cri-socket", "err", err)
		return
	}
	slog.Debug("events carry no pod fields", "err", err)
}
