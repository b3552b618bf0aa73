// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"cmp"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/tracer-dev/tracer/bench/result"
	"github.com/tracer-dev/tracer/tracer/host"
)

// Sample is what one run of a workload under one mode measured.
type Sample struct {
	Round int
	// The workload's own figures, as /usr/bin/time reports them: wall time
	// from fork to reap, and the user and system time of the workload and
	// every descendant it waited for (wait4 rusage).
	Elapsed, User, Sys float64
	// Paced is how long a rate workload's paced loop took (0: not one):
	// its rate is judged over that, without the process's start and end.
	Paced float64
	// TracerCPU is the watching process's user+sys from the moment it was
	// watching until it exited (or drained); KauditdCPU the kernel audit
	// thread's over the same span, where readable.
	TracerCPU, KauditdCPU float64
	// BacklogWait is the jiffies processes slept on a full audit backlog.
	BacklogWait float64
	// DelayP99Ms is Observation.DelayP99Ms.
	DelayP99Ms float64
	// Seen is -1 when the mode cannot tell (none, or a log that rotated away).
	Seen, Lost int64
	// Queued is the audit backlog when the workload ended, of QueueLimit
	// (Observation.Queued).
	Queued, QueueLimit int64
	Note               string
	// Label is what the mode says it ran as, when its name does not say it.
	Label string
	// Metric is the workload's own figure (Workload.Metric), Ops the
	// operations it says it did; 0 without one.
	Metric float64
	Ops    int64
	// NodeBusy is the node's busy CPU time (all CPUs) while the workload ran.
	NodeBusy float64
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
	return roundRatiosOf(samples, base, func(s Sample) float64 { return s.Elapsed })
}

// roundRatiosOf is RoundRatios of any figure of a sample.
func roundRatiosOf(samples, base []Sample, figure func(Sample) float64) []float64 {
	byRound := make(map[int]float64, len(base))
	for _, b := range base {
		byRound[b.Round] = figure(b)
	}
	var out []float64
	for _, s := range samples {
		if b, ok := byRound[s.Round]; ok && b > 0 {
			out = append(out, figure(s)/b)
		}
	}
	return out
}

// tQuantile975 is the 97.5% quantile of Student's t distribution by degrees
// of freedom (1 to 30), for 95% two-sided intervals.
var tQuantile975 = []float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}

func tQuantile(df int) float64 {
	switch {
	case df < 1:
		return math.NaN()
	case df < len(tQuantile975):
		return tQuantile975[df]
	case df < 60:
		return 2.021
	case df < 120:
		return 2.000
	}
	return 1.960
}

// RatioCI95 is a 95% confidence interval of a ratio from its per-round
// values: Student's t interval of the mean of their logarithms, turned back
// into ratios. Logarithms because a ratio's noise is multiplicative (a round
// 10% slower is 1.1x, one 10% faster 0.91x), and the interval stays
// positive. Rounds are few, so t rather than a normal or bootstrap interval:
// with 2 or 3 rounds it is wide, as it should be. ok is false with fewer
// than 2 values.
func RatioCI95(ratios []float64) (lo, hi float64, ok bool) {
	var logs []float64
	for _, r := range ratios {
		if r > 0 && !math.IsNaN(r) && !math.IsInf(r, 0) {
			logs = append(logs, math.Log(r))
		}
	}
	n := len(logs)
	if n < 2 {
		return 0, 0, false
	}
	mean := 0.0
	for _, l := range logs {
		mean += l
	}
	mean /= float64(n)
	ss := 0.0
	for _, l := range logs {
		ss += (l - mean) * (l - mean)
	}
	half := tQuantile(n-1) * math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
	return math.Exp(mean - half), math.Exp(mean + half), true
}

// Summarize turns the samples of one workload and mode into a result row:
// medians of the times, min and max elapsed, the median of the per-round
// ratios to base (nil base: the row is the baseline, ratio 1) and their 95%
// interval, medians of the tracer's CPU, and events seen as the smallest
// count of any round and lost as the largest, so that one bad round is
// never hidden by the others.
func Summarize(r *result.Row, samples, base []Sample) {
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
		r.RatioCI95 = []float64{1, 1}
		r.Noise = true
	} else {
		ratios := RoundRatios(samples, base)
		r.RatioElapsed = Median(ratios)
		r.RatioCI95, r.Noise = interval(ratios)
	}
	for _, s := range samples {
		if s.Label != "" {
			r.Label = s.Label
		}
	}
	r.TracerCPUS = Median(tcpu)
	r.KauditdCPUS = Median(kcpu)
	r.EventsSeen = seen
	r.EventsLost = lost
}

// interval is RatioCI95 as a result row holds it, and whether it contains
// 1.0; without an interval (one round) nothing is significant.
func interval(ratios []float64) ([]float64, bool) {
	lo, hi, ok := RatioCI95(ratios)
	if !ok {
		return nil, true
	}
	return []float64{round4(lo), round4(hi)}, lo <= 1 && 1 <= hi
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// SummarizeFloor adds to r the ratio to floor, the samples of the mode
// that is r's lower bound, round by round as the ratio to none.
func SummarizeFloor(r *result.Row, floor string, samples, floorSamples []Sample) {
	ratios := RoundRatios(samples, floorSamples)
	if len(ratios) == 0 {
		return
	}
	r.Floor = floor
	r.RatioFloor = Median(ratios)
	r.RatioFloorCI95, _ = interval(ratios)
}

// rateHeldShare is the share of its --rate a rate workload must reach for
// the rate to count as held: below it, the machine could not keep up and
// the round measured something else.
const rateHeldShare = 0.9

// SummarizeCost adds to r the rate a rate workload reached and whether it
// held it, the node's busy CPU, and (for a watching mode, events > 0) the
// watcher's CPU per event: its processes' and kauditd's CPU over the events
// the workload made of the classes the mode watches. Rounds that did not
// hold the rate are left out of the per-event figure and named in the
// note; when no round held it, the figure is over them all, at the rate
// reached (RateAchievedPerS), and RateHeld says so.
func SummarizeCost(r *result.Row, w *Workload, samples []Sample, events int64, watching bool) {
	var busy, per, all []float64
	var achieved, delays []float64
	held := true
	var short []string
	for _, s := range samples {
		busy = append(busy, s.NodeBusy)
		if s.DelayP99Ms > 0 {
			delays = append(delays, s.DelayP99Ms)
		}
		v := -1.0
		if watching && events > 0 {
			v = (s.TracerCPU + s.KauditdCPU) / float64(events) * 1e6
			all = append(all, v)
		}
		if span := cmp.Or(s.Paced, s.Elapsed); w.Rate > 0 && span > 0 {
			a := float64(w.Count) / span
			achieved = append(achieved, a)
			if a < rateHeldShare*w.Rate {
				held = false
				short = append(short, fmt.Sprintf("round %d reached %.0f/s", s.Round, a))
				continue
			}
		}
		if v >= 0 {
			per = append(per, v)
		}
	}
	r.NodeBusyCPUS = Median(busy)
	if len(delays) > 0 {
		d := Median(delays)
		r.DelayP99Ms = &d
	}
	if w.Rate > 0 {
		r.RatePerS = w.Rate
		r.RateAchievedPerS = math.Round(Median(achieved))
		r.RateHeld = &held
		switch {
		case held:
		case len(per) > 0:
			r.Note = joinNote(r.Note, fmt.Sprintf("rate %.0f/s not held (%s): left out of the CPU per event", w.Rate, strings.Join(short, ", ")))
		default:
			r.Note = joinNote(r.Note, fmt.Sprintf("rate %.0f/s held in no round (%s): the CPU per event is at the rate reached", w.Rate, strings.Join(short, ", ")))
			per = all
		}
	}
	if len(per) == 0 {
		return
	}
	m := math.Round(Median(per)*100) / 100
	r.WatcherCPUPerEventUS = &m
	if lo, hi, ok := RatioCI95(per); ok {
		r.WatcherCPUPerEventCI95 = []float64{math.Round(lo*100) / 100, math.Round(hi*100) / 100}
	}
}

// parseBusy reads the "cpu" line of /proc/stat: user, nice, system, idle,
// iowait, irq, softirq, steal (guest time is inside user), in clock
// ticks; it returns all but idle and iowait, in seconds.
func parseBusy(line string) float64 {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var busy float64
	for i, v := range f[1:9] {
		if i == 3 || i == 4 {
			continue
		}
		n, _ := strconv.ParseFloat(v, 64)
		busy += n
	}
	return busy / host.ClockTicks
}
