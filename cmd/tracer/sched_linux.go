// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// batchScheduling makes every thread of this process SCHED_BATCH: the
// same CPU share as before, but a woken thread (the ring buffer reader,
// the output writer) does not preempt the task running where it wakes.
// On a node with few CPUs and a busy one, tracer's threads otherwise cut
// into the work they watch (docs/overhead.md, SCHED_BATCH). Threads the
// runtime starts later inherit the policy from the thread that starts
// them. Only for the eBPF backend: the kernel keeps its events in a ring
// and never waits on the reader, where a late audit reader makes the
// audited processes wait on a full backlog.
func batchScheduling() error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("listing this process's threads: %w", err)
	}
	attr := &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_BATCH}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		// A thread that exited meanwhile is no error.
		if err := unix.SchedSetAttr(tid, attr, 0); err != nil && err != unix.ESRCH {
			return fmt.Errorf("setting SCHED_BATCH on thread %d: %w", tid, err)
		}
	}
	return nil
}

// oneProc runs the eBPF watcher's Go code on one thread at a time
// (GOMAXPROCS 1) unless GOMAXPROCS says otherwise. Its reader, output
// queue and writer hand work to each other at every batch; with a second
// P idle, each hand-off wakes another thread, and the runtime's monitor
// after it: at a steady 300 execs a second that was a fifth of its CPU
// (docs/overhead.md). The kernel batches a storm, so one thread keeps up.
func oneProc() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}
