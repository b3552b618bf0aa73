// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/tracer"
)

// rateFlags is watch's --rate-limit (tracer/ratelimit.go).
type rateFlags struct {
	limit string
}

func (f *rateFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.limit, "rate-limit", "", "at most N events a second from one cgroup (a process of the root cgroup counts alone), as N/s, e.g. 1000/s; the rest are counted and said in throttle events, and other sources' events pass untouched (ebpf: in the kernel; audit: at the SYSCALL record)")
}

// apply puts --rate-limit in cfg.
func (f *rateFlags) apply(cfg *tracer.Config) error {
	if f.limit == "" {
		return nil
	}
	n, err := tracer.ParseRateLimit(f.limit)
	if err != nil {
		return err
	}
	cfg.RateLimit = n
	return nil
}

// summary is the summary line's part about --rate-limit: "" without it.
func (f *rateFlags) summary(st tracer.Stats, throttleEvents uint64) string {
	if f.limit == "" {
		return ""
	}
	return fmt.Sprintf(", %d throttled by --rate-limit (%s) in %d throttle events", st.TotalThrottled(), st.ThrottleSummary(), throttleEvents)
}
