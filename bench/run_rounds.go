// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tracer-dev/tracer/bench/result"
)

// Variant is a mode writing to one storage. Modes that write no log run
// once whatever the storage (Storage nil).
type Variant struct {
	Mode    Mode
	Storage *Storage
}

// StorageLabel is the storage as results show it, "" for modes without a log.
func (v Variant) StorageLabel() string {
	if v.Storage == nil {
		return ""
	}
	return v.Storage.Label
}

func (v Variant) String() string {
	if l := v.StorageLabel(); l != "" {
		return v.Mode.Name() + "@" + l
	}
	return v.Mode.Name()
}

// Progress is reported after every run.
type Progress struct {
	Done, Total int
	Workload    string
	Variant     string
	Round       int
	Sample      Sample
	Err         error
}

// Runner runs every workload under every variant, rounds interleaved: for
// each workload, round 1 runs all variants, then round 2, ..., so that
// drift on a shared machine hits all modes alike. Each round starts one
// variant further down the list, so that no mode always runs right after
// the same other one (whose log is still being written back, say). Setup
// and Stop of a mode are outside the timed part.
type Runner struct {
	Workloads []*Workload
	// Variants in run order; the one whose mode is "none" is the baseline
	// of the ratios.
	Variants []Variant
	Rounds   int
	// MinRounds, when between 1 and Rounds, makes the rounds adaptive:
	// after MinRounds, a mode runs further rounds only while the 95%
	// interval of its ratio to none still holds 1.0x (with its floor, so
	// that the two stay paired). A mode whose cost is already beyond doubt
	// -- often the slowest, auditd at 50x -- is not run again for nothing.
	MinRounds int
	// WorkDir holds thread id files and the logs of modes without storage.
	WorkDir string
	// Budget, when set, makes the rounds past MinRounds (up to Rounds) go
	// on while some mode's interval still overlaps a neighbour's (it cannot
	// be ranked yet) and the bench's time allows: each workload gets an
	// equal share of what is left of Budget when it starts.
	Budget time.Duration
	// Cgroup, when set, is where workloads run (bpftrace filters on it).
	Cgroup *Cgroup
	// Sweep, when set, runs after the rounds (see Sweep).
	Sweep *Sweep
	// Progress, when set, is called after each run.
	Progress func(Progress)
	// SweepSteps holds the sweep's runs after Run.
	SweepSteps []result.SweepStep
}

// Failures lists the modes that could not complete, this tool's own apart
// from the peers (auditd, bpftrace): a peer that fails says something
// about the node, not about this tool.
type Failures struct {
	Own, Peer []error
}

func (f *Failures) Error() string {
	return errors.Join(append(append([]error(nil), f.Own...), f.Peer...)...).Error()
}

type variantState struct {
	v       Variant
	ready   bool  // Setup succeeded
	err     error // why it could not run at all: *SkipError at Setup, or a failure
	samples map[*Workload][]Sample
	// failed holds, per workload, why the mode stopped there after its
	// retries: the next workload tries it again.
	failed map[*Workload]error
	// retried lists, per workload, the failed attempts that were run again.
	retried map[*Workload][]retry
}

// retry is a failed attempt that was run again.
type retry struct {
	round int
	cause string
}

// retryNotes says what failed and was run again, each cause once: a cause
// the final failure (if any) repeats is said by it.
func (st *variantState) retryNotes(w *Workload, failed error) string {
	out := ""
	rounds := map[string][]string{}
	var order []string
	for _, r := range st.retried[w] {
		if _, ok := rounds[r.cause]; !ok {
			order = append(order, r.cause)
		}
		rounds[r.cause] = append(rounds[r.cause], strconv.Itoa(r.round))
	}
	for _, c := range order {
		if failed != nil && strings.HasSuffix(failed.Error(), c) {
			continue
		}
		out = joinNote(out, fmt.Sprintf("round %s failed and was run again: %s", strings.Join(rounds[c], ", "), c))
	}
	return out
}

// Retries is how often a failed run is run again before the mode is given
// up on for that workload: a peer's round can fail for a reason of the
// moment (auditd slow to start, a marker record the kernel dropped).
const Retries = 2

// Run runs the bench and returns one result per workload and variant. The
// error is a *Failures for modes that could not complete (skipped modes are
// not failures: their results say why they were skipped), joined with ctx's
// error when the run was interrupted; results hold what was measured.
func (r *Runner) Run(ctx context.Context) ([]result.Row, error) {
	if r.Rounds < 1 {
		return nil, fmt.Errorf("rounds must be at least 1, not %d", r.Rounds)
	}
	states := make([]*variantState, len(r.Variants))
	for i, v := range r.Variants {
		states[i] = &variantState{v: v, samples: map[*Workload][]Sample{},
			failed: map[*Workload]error{}, retried: map[*Workload][]retry{}}
	}
	defer func() {
		for i := len(states) - 1; i >= 0; i-- {
			if states[i].ready {
				_ = states[i].v.Mode.Teardown()
			}
		}
	}()
	fail := &Failures{}
	addFailure := func(st *variantState, err error) {
		err = fmt.Errorf("%s: %w", st.v, err)
		if IsPeer(st.v.Mode.Name()) {
			fail.Peer = append(fail.Peer, err)
		} else {
			fail.Own = append(fail.Own, err)
		}
	}
	for _, st := range states {
		if ctx.Err() != nil {
			break
		}
		if err := st.v.Mode.Setup(ctx); err != nil {
			// Setup cleans up after itself, but Teardown is cheap and sure.
			_ = st.v.Mode.Teardown()
			st.err = err
			if !IsSkip(err) {
				addFailure(st, err)
			}
			continue
		}
		st.ready = true
	}

	active := func() int {
		n := 0
		for _, st := range states {
			if st.ready && st.err == nil {
				n++
			}
		}
		return n
	}
	var base *variantState
	floors := map[string]*variantState{}
	for _, st := range states {
		switch n := st.v.Mode.Name(); {
		case n == baseline && base == nil:
			base = st
		case isFloor(n):
			floors[n] = st
		}
	}
	done, total := 0, len(r.Workloads)*r.Rounds*active()
	// A workload's server (redis, nginx) runs through all its rounds and
	// is stopped after them; the deferred stops catch an interrupted run.
	var stops []func() error
	defer func() {
		for _, stop := range stops {
			_ = stop()
		}
	}()
	serverErr := map[*Workload]error{}
	began := time.Now()
loop:
	for wi, w := range r.Workloads {
		if ctx.Err() != nil {
			break
		}
		wStart := time.Now()
		share := (r.Budget - time.Since(began)) / time.Duration(len(r.Workloads)-wi)
		// How long each variant's last run of w took: the next round's
		// length is that of the variants it still runs.
		took := map[*variantState]time.Duration{}
		stopServer, err := w.startServer(ctx, r.WorkDir, r.Cgroup)
		if err != nil {
			serverErr[w] = err
			fail.Own = append(fail.Own, err)
			total -= r.Rounds * active()
			continue
		}
		stops = append(stops, stopServer)
		for round := 1; round <= r.Rounds; round++ {
			var settled map[*variantState]bool
			if round > r.minRounds() && base != nil {
				settled = r.settled(states, base, w)
				left := 0
				for _, st := range states {
					if st != base && st.ready && st.err == nil && st.failed[w] == nil && !settled[st] {
						left++
					}
				}
				if left == 0 {
					total -= (r.Rounds - round + 1) * active()
					break
				}
				if r.Budget > 0 {
					next := took[base]
					for st, d := range took {
						if st != base && !settled[st] && st.failed[w] == nil {
							next += d
						}
					}
					if time.Since(wStart)+next > share {
						// Out of this workload's time: the report says which
						// modes it could not rank.
						total -= (r.Rounds - round + 1) * active()
						break
					}
				}
			}
			for k := range states {
				st := states[(k+round-1)%len(states)]
				if !st.ready || st.err != nil || st.failed[w] != nil {
					continue
				}
				if settled[st] {
					total--
					continue
				}
				if ctx.Err() != nil {
					break loop
				}
				for attempt := 0; ; attempt++ {
					runStart := time.Now()
					s, err := r.runOnce(ctx, w, round, st.v)
					took[st] = time.Since(runStart)
					if err == nil || ctx.Err() != nil {
						done++
						if err == nil {
							st.samples[w] = append(st.samples[w], s)
						}
						r.progress(Progress{Done: done, Total: total, Workload: w.Name, Variant: st.v.String(),
							Round: round, Sample: s, Err: err})
						break
					}
					var werr *workloadError
					if attempt < Retries && !errors.As(err, &werr) {
						// Run it again: one failed round says little, and
						// a mode dropped for it would vanish from the run.
						st.retried[w] = append(st.retried[w], retry{round, err.Error()})
						r.progress(Progress{Done: done, Total: total, Workload: w.Name, Variant: st.v.String(),
							Round: round, Sample: s, Err: fmt.Errorf("%w (running it again)", err)})
						continue
					}
					// Given up for this workload only: the next tries it again.
					done++
					st.failed[w] = fmt.Errorf("%s round %d, %d tries: %w", w.Name, round, attempt+1, err)
					addFailure(st, st.failed[w])
					total -= r.Rounds - round
					r.progress(Progress{Done: done, Total: total, Workload: w.Name, Variant: st.v.String(),
						Round: round, Sample: s, Err: err})
					break
				}
			}
		}
		if err := stopServer(); err != nil {
			fail.Own = append(fail.Own, fmt.Errorf("stopping %s's server: %w", w.Name, err))
		}
	}

	var results []result.Row
	for _, w := range r.Workloads {
		for _, st := range states {
			res := result.Row{Workload: w.Name, Mode: st.v.Mode.Name(), Storage: st.v.StorageLabel(),
				Count: w.Count, EventsExpected: -1, EventsSeen: -1, RatePerS: w.Rate}
			want := expectedOf(st.v.Mode.Name(), w)
			if w.Known {
				res.EventsExpected = want.Total()
			}
			samples := st.samples[w]
			failed := st.err
			if failed == nil {
				failed = st.failed[w]
			}
			res.Retried = len(st.retried[w])
			if len(samples) == 0 {
				switch {
				case serverErr[w] != nil:
					res.Skipped = "failed: " + serverErr[w].Error()
				case failed != nil && IsSkip(failed):
					res.Skipped = failed.Error()
				case failed != nil:
					res.Skipped = joinNote("failed: "+failed.Error(), st.retryNotes(w, failed))
				case ctx.Err() != nil:
					res.Skipped = "interrupted"
				default:
					continue
				}
				results = append(results, res)
				continue
			}
			var baseSamples []Sample
			if st != base {
				baseSamples = []Sample{}
				if base != nil {
					baseSamples = base.samples[w]
				}
			}
			Summarize(&res, samples, baseSamples)
			SummarizeMetric(&res, w.Metric, samples, baseSamples)
			if f := floors[FloorOf(res.Mode)]; f != nil && !(IsPeer(res.Mode) && besideSomething(f.samples[w])) {
				// auditd against a floor that ran beside it (the node's own
				// auditd) would be auditd against itself plus a reader.
				SummarizeFloor(&res, f.v.Mode.Name(), samples, f.samples[w])
			}
			if st == base {
				res.EventsSeen = -1
			}
			res.Note = notes(samples)
			var waits []float64
			for _, s := range samples {
				waits = append(waits, s.BacklogWait)
			}
			if w := Median(waits); w > 0 {
				what := fmt.Sprintf("%.0f jiffies", w)
				if sec := jiffiesToSeconds(w); sec >= 0 {
					what = fmt.Sprintf("%.2fs", sec)
				}
				res.Note = joinNote(fmt.Sprintf("processes slept %s (median) on a full audit backlog", what), res.Note)
			}
			events := int64(0)
			if w.Known {
				events = want.Total()
			}
			SummarizeCost(&res, w, samples, events, st != base)
			res.Note = joinNote(res.Note, st.retryNotes(w, failed))
			if failed != nil {
				res.Note = joinNote(res.Note, "failed: "+failed.Error())
			}
			results = append(results, res)
		}
	}
	if r.Sweep != nil && ctx.Err() == nil {
		var ready []*variantState
		for _, st := range states {
			if st.ready && st.err == nil {
				ready = append(ready, st)
			}
		}
		r.SweepSteps = r.runSweep(ctx, ready, results)
	}
	var err error
	if len(fail.Own)+len(fail.Peer) > 0 {
		err = fail
	}
	if ctx.Err() != nil {
		err = errors.Join(err, ctx.Err())
	}
	return results, err
}

// besideSomething reports whether samples ran beside another holder of
// the audit PID.
func besideSomething(samples []Sample) bool {
	for _, s := range samples {
		if strings.Contains(s.Label, "(beside ") {
			return true
		}
	}
	return false
}

func (r *Runner) progress(p Progress) {
	if r.Progress != nil {
		r.Progress(p)
	}
}

func (r *Runner) minRounds() int {
	if r.MinRounds < 1 || r.MinRounds > r.Rounds {
		return r.Rounds
	}
	return r.MinRounds
}

// settled returns the variants that need no further round of w. With a
// Budget, those that are ranked (rankedOn); without, those whose ratio to
// none has an interval that lies above 1.0x, and floors whose own interval
// does and whose backends are settled too.
func (r *Runner) settled(states []*variantState, base *variantState, w *Workload) map[*variantState]bool {
	if r.Budget > 0 {
		return rankedOn(states, base, w)
	}
	out := map[*variantState]bool{}
	for _, st := range states {
		if st == base {
			continue
		}
		lo, _, ok := RatioCI95(RoundRatios(st.samples[w], base.samples[w]))
		out[st] = ok && lo > 1
	}
	for _, st := range states {
		if f := FloorOf(st.v.Mode.Name()); f != "" && !out[st] && st.ready && st.err == nil {
			for _, fl := range states {
				if fl.v.Mode.Name() == f {
					out[fl] = false
				}
			}
		}
	}
	return out
}

// rankedOn returns, for w, the variants whose 95% interval overlaps
// neither neighbour's once all are ordered by their median: they are
// ranked, and another round would not change their place. The figure is
// the ratio of elapsed time to none's, or, for a paced workload (whose
// elapsed time the pace sets), the watcher's CPU per event; a variant with
// no such figure (a floor has no watcher) has nothing to rank.
func rankedOn(states []*variantState, base *variantState, w *Workload) map[*variantState]bool {
	type fig struct {
		st          *variantState
		lo, mid, hi float64
	}
	var figs []fig
	out := map[*variantState]bool{}
	for _, st := range states {
		if st == base || !st.ready || st.err != nil || st.failed[w] != nil {
			continue
		}
		var vals []float64
		if w.Rate > 0 {
			events := expectedOf(st.v.Mode.Name(), w).Total()
			for _, s := range st.samples[w] {
				if c := s.TracerCPU + s.KauditdCPU; events > 0 && c > 0 {
					vals = append(vals, c/float64(events))
				}
			}
			if len(vals) == 0 && len(st.samples[w]) > 0 {
				out[st] = true
				continue
			}
		} else {
			vals = RoundRatios(st.samples[w], base.samples[w])
		}
		lo, hi, ok := RatioCI95(vals)
		if !ok {
			figs = append(figs, fig{st: st, lo: math.Inf(-1), mid: Median(vals), hi: math.Inf(1)})
			continue
		}
		figs = append(figs, fig{st: st, lo: lo, mid: Median(vals), hi: hi})
	}
	sort.SliceStable(figs, func(i, j int) bool { return figs[i].mid < figs[j].mid })
	for i, f := range figs {
		below := i == 0 || figs[i-1].hi < f.lo
		above := i == len(figs)-1 || f.hi < figs[i+1].lo
		out[f.st] = below && above
	}
	return out
}

// notes keeps the distinct parts of the samples' notes, in order, with the
// rounds they came from when not all rounds had them.
func notes(samples []Sample) string {
	var order []string
	rounds := map[string][]string{}
	for _, s := range samples {
		for _, part := range strings.Split(s.Note, "; ") {
			if part == "" {
				continue
			}
			if _, ok := rounds[part]; !ok {
				order = append(order, part)
			}
			rounds[part] = append(rounds[part], strconv.Itoa(s.Round))
		}
	}
	out := ""
	for _, part := range order {
		if r := rounds[part]; len(r) < len(samples) {
			part += " (round " + strings.Join(r, ", ") + ")"
		}
		out = joinNote(out, part)
	}
	return out
}

func (r *Runner) runOnce(ctx context.Context, w *Workload, round int, v Variant) (Sample, error) {
	parent := r.WorkDir
	if v.Storage != nil {
		parent = v.Storage.Dir
	}
	dir, err := os.MkdirTemp(parent, fmt.Sprintf("%s-r%d-", v.Mode.Name(), round))
	if err != nil {
		return Sample{}, fmt.Errorf("making run directory: %w", err)
	}
	// The logs go as soon as they are counted: deleted files leave no dirty
	// pages for the next run to wait on.
	defer os.RemoveAll(dir)
	run := &Run{Workload: w, Round: round, Dir: dir, Own: r.Cgroup, Interrupted: ctx.Done()}
	if v.Storage != nil {
		run.LogCgroup = v.Storage.cgroup
	}
	tids := filepath.Join(r.WorkDir, "tids")
	_ = os.Remove(tids)

	if err := v.Mode.Start(ctx, run); err != nil {
		return Sample{}, fmt.Errorf("starting %s: %w", v.Mode.Name(), err)
	}
	busy0 := nodeBusyCPU()
	s, werr := runWorkload(ctx, w, run, tids, r.Cgroup)
	s.NodeBusy = max(nodeBusyCPU()-busy0, 0)
	if werr == nil {
		run.Threads, s.Paced, werr = readTids(tids)
	}
	// Stop must run even when interrupted: it removes rules and probes.
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	obs, serr := v.Mode.Stop(stopCtx, run)
	cancel()
	if werr != nil {
		return s, &workloadError{werr}
	}
	if serr != nil {
		return s, fmt.Errorf("stopping %s: %w", v.Mode.Name(), serr)
	}
	s.Round = round
	s.Seen, s.Lost, s.Queued, s.QueueLimit = obs.Seen, obs.Lost, obs.Queued, obs.QueueLimit
	s.TracerCPU, s.KauditdCPU, s.BacklogWait = obs.TracerCPU, obs.KauditdCPU, obs.BacklogWait
	s.DelayP99Ms = obs.DelayP99Ms
	s.Note, s.Label = obs.Note, obs.Label
	return s, nil
}

// workloadError is a run's failure of the workload itself, not of the
// mode: a command that fails fails again, so it is not run again.
type workloadError struct{ err error }

func (e *workloadError) Error() string { return e.err.Error() }
func (e *workloadError) Unwrap() error { return e.err }

// nodeBusyCPU is the node's busy CPU time so far, all CPUs, in seconds:
// the first line of /proc/stat but idle and iowait (0 when unreadable).
func nodeBusyCPU() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseBusy(line)
}
