// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"testing"
	"time"
)

// The 99th percentile comes from the right bucket, rounded up to the
// millisecond; events without a time are not counted.
func TestDelayHistQuantile(t *testing.T) {
	var h DelayHist
	if h.Quantile(0.99) != 0 {
		t.Fatalf("empty: %v, want 0", h.Quantile(0.99))
	}
	// The delays are given, not measured: time.Since under a loaded
	// -race run would move them across buckets.
	for i := 0; i < 990; i++ {
		h.add(3*time.Millisecond + 500*time.Microsecond) // 3.x ms: bucket 3
	}
	for i := 0; i < 10; i++ {
		h.add(80 * time.Millisecond)
	}
	h.Observe(time.Time{})
	if h.Count() != 1000 {
		t.Fatalf("count %d, want 1000", h.Count())
	}
	if q := h.Quantile(0.99); q != 4*time.Millisecond {
		t.Errorf("p99 %v, want 4ms", q)
	}
	h.add(80 * time.Millisecond) // 11 of 1001 now: past 1%
	if q := h.Quantile(0.99); q != 81*time.Millisecond {
		t.Errorf("p99 %v, want 81ms", q)
	}
	h.Observe(time.Now().Add(-time.Hour))
	if q := h.Quantile(1); q != delayBuckets*time.Millisecond {
		t.Errorf("max %v, want the last bucket", q)
	}
}
