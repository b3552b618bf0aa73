// SPDX-License-Identifier: Apache-2.0

// Command gospin keeps a few goroutines busy for a while, so that the Go
// runtime preempts them with SIGURG sent by tgkill to its own threads: the
// runtime noise tracer leaves out by default.
package main

import (
	"os"
	"runtime"
	"time"
)

func main() {
	runtime.GOMAXPROCS(2)
	end := time.Now().Add(400 * time.Millisecond)
	done := make(chan int)
	for range 4 {
		go func() {
			n := 0
			for time.Now().Before(end) {
				n++
			}
			done <- n
		}()
	}
	for range 4 {
		<-done
	}
	os.Exit(0)
}
