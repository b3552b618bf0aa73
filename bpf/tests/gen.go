// SPDX-License-Identifier: Apache-2.0

// Package tests runs the BPF headers' logic with BPF_PROG_TEST_RUN: small
// BPF objects (batch.bpf.c) call the functions of ../headers that
// tracer.bpf.c's programs use, on input the Go tests craft, and the tests
// check what they did. The objects and their bpf2go bindings are
// committed, like package bpf's; the tests need root.
//
// Rebuild after editing the C source or the headers: go generate ./bpf/...
package tests

//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3" -target amd64,arm64 -type event -type repeat_key -type batch_op -type batch_result Batch batch.bpf.c -- -I..
