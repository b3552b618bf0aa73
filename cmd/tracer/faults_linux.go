// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/tracer-dev/tracer/tracer/audit"
)

// killAfterChangesEnv is for the fault-injection tests only: with it set
// to N, tracer kills itself with SIGKILL right after its N-th change to
// the node's audit state, so a test can check that `tracer cleanup` puts
// the node back from every point of start, lean-records setup and exit.
const killAfterChangesEnv = "TRACER_TEST_KILL_AFTER_CHANGES"

func init() {
	n, err := strconv.Atoi(os.Getenv(killAfterChangesEnv))
	if err != nil || n <= 0 {
		return
	}
	var count atomic.Int64
	audit.SetChangeHook(func(step string) {
		if count.Add(1) == int64(n) {
			fmt.Fprintf(os.Stderr, "tracer: test: killed after change %d (%s)\n", n, step)
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	})
}
