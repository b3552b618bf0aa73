package bench

import (
	"math"
	"sort"
)

// Sample is what one run of a workload under one mode measured.
type Sample struct {
	Round int
	// The workload's own figures, as /usr/bin/time reports them: wall time
	// from fork to reap, and the user and system time of the workload and
	// every descendant it waited for (wait4 rusage).
	Elapsed, User, Sys float64
	// TracerCPU is the watching process's user+sys from the moment it was
	// watching until it exited (or drained); KauditdCPU the kernel audit
	// thread's over the same span, where readable.
	TracerCPU, KauditdCPU float64
	// BacklogWait is the jiffies processes slept on a full audit backlog.
	BacklogWait float64
	// Seen is -1 when the mode cannot tell (none, or a log that rotated away).
	Seen, Lost int64
	Note       string
}

// CPUPct is (user+sys)/elapsed in percent, as /usr/bin/time prints it.
func (s Sample) CPUPct() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return 100 * (s.User + s.Sys) / s.Elapsed
}

// Median returns the median of xs (the mean of the middle two for an even
// count), or 0 for none. NaNs are left out.
func Median(xs []float64) float64 {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// MinMax returns the smallest and largest of xs, or 0, 0 for none.
func MinMax(xs []float64) (lo, hi float64) {
	for i, x := range xs {
		if i == 0 || x < lo {
			lo = x
		}
		if i == 0 || x > hi {
			hi = x
		}
	}
	return lo, hi
}

// RoundRatios divides each sample's elapsed time by the baseline's elapsed
// time in the same round. Rounds without a baseline give no ratio: a ratio
// across rounds would carry the drift that interleaving is there to cancel.
func RoundRatios(samples, base []Sample) []float64 {
	byRound := make(map[int]float64, len(base))
	for _, b := range base {
		byRound[b.Round] = b.Elapsed
	}
	var out []float64
	for _, s := range samples {
		if b, ok := byRound[s.Round]; ok && b > 0 {
			out = append(out, s.Elapsed/b)
		}
	}
	return out
}

// Summarize turns the samples of one workload and mode into a result row:
// medians of the times, min and max elapsed, the median of the per-round
// ratios to base (nil base: the row is the baseline, ratio 1), medians of
// the tracer's CPU, and events seen as the smallest count of any round and
// lost as the largest, so that one bad round is never hidden by the others.
func Summarize(r *Result, samples, base []Sample) {
	var el, us, sy, pct, tcpu, kcpu []float64
	seen, lost := int64(-1), int64(0)
	for i, s := range samples {
		el = append(el, s.Elapsed)
		us = append(us, s.User)
		sy = append(sy, s.Sys)
		pct = append(pct, s.CPUPct())
		tcpu = append(tcpu, s.TracerCPU)
		kcpu = append(kcpu, s.KauditdCPU)
		if i == 0 || s.Seen < seen {
			seen = s.Seen
		}
		if s.Lost > lost {
			lost = s.Lost
		}
	}
	r.Rounds = len(samples)
	r.ElapsedS = Median(el)
	r.UserS = Median(us)
	r.SysS = Median(sy)
	r.CPUPct = Median(pct)
	r.ElapsedMinS, r.ElapsedMaxS = MinMax(el)
	if base == nil {
		r.RatioElapsed = 1
	} else {
		r.RatioElapsed = Median(RoundRatios(samples, base))
	}
	r.TracerCPUS = Median(tcpu)
	r.KauditdCPUS = Median(kcpu)
	r.EventsSeen = seen
	r.EventsLost = lost
}
