// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"sync/atomic"
	"time"
)

// delayBuckets is the histogram's range in milliseconds; longer delays
// share the last bucket.
const delayBuckets = 10_000

// DelayHist counts event delays (kernel time to output) in 1 ms buckets:
// the figure --max-delay bounds, measured. Safe for concurrent use.
type DelayHist struct {
	n       atomic.Uint64
	sumNS   atomic.Uint64
	buckets [delayBuckets + 1]atomic.Uint64
}

// Observe counts the delay of an event that happened at t (a zero t, an
// event without a time, is not counted).
func (h *DelayHist) Observe(t time.Time) {
	if t.IsZero() {
		return
	}
	h.add(time.Since(t))
}

// add counts one delay d.
func (h *DelayHist) add(d time.Duration) {
	i := 0
	if d > 0 {
		i = int(d / time.Millisecond)
		h.sumNS.Add(uint64(d))
	}
	if i > delayBuckets {
		i = delayBuckets
	}
	h.buckets[i].Add(1)
	h.n.Add(1)
}

// Sum is the delays observed, added up.
func (h *DelayHist) Sum() time.Duration { return time.Duration(h.sumNS.Load()) }

// Below is how many observed delays were under le, at the millisecond (le
// is rounded down to one).
func (h *DelayHist) Below(le time.Duration) uint64 {
	var n uint64
	for i := 0; i < min(int(le/time.Millisecond), delayBuckets); i++ {
		n += h.buckets[i].Load()
	}
	return n
}

// Count is how many delays were observed.
func (h *DelayHist) Count() uint64 { return h.n.Load() }

// Quantile returns the delay under which a fraction q of the observed
// events fall, rounded up to the millisecond (0 without observations;
// 10 s for the last bucket, which holds 10 s and more).
func (h *DelayHist) Quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	want := uint64(q*float64(n) + 0.999999)
	if want == 0 {
		want = 1
	}
	var seen uint64
	for i := range h.buckets {
		seen += h.buckets[i].Load()
		if seen >= want {
			return time.Duration(min(i+1, delayBuckets)) * time.Millisecond
		}
	}
	return delayBuckets * time.Millisecond
}
