// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"
)

// Calibrate sizes built-in workload name by time: it runs it untraced,
// starting from a small count and scaling the count by how far the run fell
// short, until one run lasts at least target. A fixed count would last 20
// ms on one machine and 20 s on another; a run this short is mostly process
// start-up and scheduler noise, and its ratios say nothing. Two runs in a
// row must reach the target; the returned elapsed is the shorter.
func Calibrate(ctx context.Context, name string, target time.Duration, self, dir string, cg *Cgroup) (*Workload, float64, error) {
	n := StartCount(name)
	if n == 0 {
		return nil, 0, fmt.Errorf("unknown workload %q", name)
	}
	tids := filepath.Join(dir, "calibrate-tids")
	defer os.Remove(tids)
	want := target.Seconds()
	for try := 0; ; try++ {
		w, err := NewBuiltin(name, n, self, dir)
		if err != nil {
			return nil, 0, err
		}
		s, err := runWorkload(ctx, w, &Run{Workload: w}, tids, cg)
		if err != nil {
			return nil, 0, fmt.Errorf("calibrating %s: %w", name, err)
		}
		if s.Elapsed >= want {
			// One run slowed by a burst of other work on the node would size
			// the workload too small: a second run must last as long.
			again, err := runWorkload(ctx, w, &Run{Workload: w}, tids, cg)
			if err != nil {
				return nil, 0, fmt.Errorf("calibrating %s: %w", name, err)
			}
			if again.Elapsed >= want {
				return w, min(s.Elapsed, again.Elapsed), nil
			}
			s = again
		}
		if try == 12 {
			return nil, 0, fmt.Errorf("calibrating %s: a count of %d still lasts only %.3fs", name, n, s.Elapsed)
		}
		// Scale by the shortfall with 15% to spare, but at most tenfold:
		// a very short run is mostly start-up, which does not scale.
		f := math.Min(10, want/math.Max(s.Elapsed, 1e-3)*1.15)
		n = max(n+1, int64(math.Ceil(float64(n)*f)))
	}
}
