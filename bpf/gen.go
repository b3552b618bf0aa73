// SPDX-License-Identifier: Apache-2.0

// Package bpf holds the tracer's BPF programs (tracer.bpf.c) and their
// compiled objects with the Go bindings bpf2go generated for them, committed
// so that building the tracer needs no clang. tracer/bpfbackend loads them; bench
// loads floor.bpf.c, empty programs on the same hooks (mode ebpf-floor).
//
// Rebuild after editing the C source (Debian: apt-get install clang llvm
// libbpf-dev):
//
//	go generate ./bpf
package bpf

//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3" -target amd64,arm64 -type event_hdr -type event -type exec_event -type exec_key -type comm_key -type signal_key -type throttle_event Tracer tracer.bpf.c -- -I.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3" -target amd64,arm64 Floor floor.bpf.c -- -I.
