// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/bench/result"
)

// fakeMode records what the runner asks of it and reports fixed figures.
type fakeMode struct {
	name     string
	setupErr error
	failAt   int   // fail Start of this run (1-based), 0: never
	failRuns []int // and of these runs
	seen     int64
	lost     int64

	mu    *sync.Mutex
	calls *[]string
	runs  int
}

func (f *fakeMode) log(s string) {
	f.mu.Lock()
	*f.calls = append(*f.calls, f.name+" "+s)
	f.mu.Unlock()
}

func (f *fakeMode) Name() string    { return f.name }
func (f *fakeMode) WritesLog() bool { return true }
func (f *fakeMode) Setup(context.Context) error {
	f.log("setup")
	return f.setupErr
}
func (f *fakeMode) Start(_ context.Context, r *Run) error {
	f.runs++
	if f.failAt == f.runs || slices.Contains(f.failRuns, f.runs) {
		return fmt.Errorf("no probes today (run %d)", f.runs)
	}
	if r.Dir == "" || r.RootPID != 0 {
		return fmt.Errorf("start: run dir %q, root pid %d", r.Dir, r.RootPID)
	}
	if _, err := os.Stat(r.Dir); err != nil {
		return err
	}
	f.log(fmt.Sprintf("start %s r%d", r.Workload.Name, r.Round))
	return nil
}
func (f *fakeMode) Stop(_ context.Context, r *Run) (Observation, error) {
	if r.RootPID <= 0 {
		return Observation{}, fmt.Errorf("stop: no root pid")
	}
	f.log(fmt.Sprintf("stop %s r%d", r.Workload.Name, r.Round))
	return Observation{Seen: f.seen, Lost: f.lost, TracerCPU: 0.5}, nil
}
func (f *fakeMode) Teardown() error {
	f.log("teardown")
	return nil
}

func newFakes(modes ...*fakeMode) ([]Variant, *[]string) {
	var mu sync.Mutex
	calls := &[]string{}
	var vs []Variant
	for _, m := range modes {
		m.mu, m.calls = &mu, calls
		vs = append(vs, Variant{Mode: m, Storage: &Storage{Label: "ssd", Dir: os.TempDir()}})
	}
	return vs, calls
}

func TestRunnerInterleavesRounds(t *testing.T) {
	none := &fakeMode{name: "none", seen: -1}
	a := &fakeMode{name: "a", seen: 1}
	skipped := &fakeMode{name: "skipped", setupErr: Skipf("tool x is not installed: apt-get install x")}
	vs, calls := newFakes(none, a, skipped)
	w1 := NewCommand([]string{"/bin/true"})
	w1.Name, w1.Known, w1.Expected = "w1", true, Tally{Exec: 1}
	w2 := NewCommand([]string{"/bin/sh", "-c", "exit 0"})
	w2.Name = "w2"
	var progress []Progress
	r := &Runner{Workloads: []*Workload{w1, w2}, Variants: vs, Rounds: 2, WorkDir: t.TempDir(),
		Progress: func(p Progress) { progress = append(progress, p) }}
	res, err := r.Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	// Round 2 starts one mode further down the list: no mode always runs
	// right after the same other one.
	want := []string{
		"none setup", "a setup", "skipped setup", "skipped teardown",
		"none start w1 r1", "none stop w1 r1", "a start w1 r1", "a stop w1 r1",
		"a start w1 r2", "a stop w1 r2", "none start w1 r2", "none stop w1 r2",
		"none start w2 r1", "none stop w2 r1", "a start w2 r1", "a stop w2 r1",
		"a start w2 r2", "a stop w2 r2", "none start w2 r2", "none stop w2 r2",
		"a teardown", "none teardown",
	}
	if strings.Join(*calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(*calls, "\n"), strings.Join(want, "\n"))
	}
	if len(progress) != 8 || progress[7].Done != 8 || progress[7].Total != 8 {
		t.Errorf("progress: %d reports, last %+v", len(progress), progress[len(progress)-1])
	}
	if len(res) != 6 {
		t.Fatalf("%d results, want 6: %+v", len(res), res)
	}
	byKey := map[string]result.Row{}
	for _, x := range res {
		byKey[x.Workload+"/"+x.Mode] = x
	}
	if x := byKey["w1/none"]; x.Rounds != 2 || x.RatioElapsed != 1 || x.EventsSeen != -1 || x.EventsExpected != 1 || x.ElapsedS <= 0 {
		t.Errorf("w1/none: %+v", x)
	}
	if x := byKey["w1/a"]; x.Rounds != 2 || x.RatioElapsed <= 0 || x.EventsSeen != 1 || x.TracerCPUS != 0.5 || x.Storage != "ssd" {
		t.Errorf("w1/a: %+v", x)
	}
	if x := byKey["w2/a"]; x.EventsExpected != -1 {
		t.Errorf("a command's events are not known: %+v", x)
	}
	if x := byKey["w2/skipped"]; !strings.Contains(x.Skipped, "apt-get install x") || x.Rounds != 0 {
		t.Errorf("w2/skipped: %+v", x)
	}
}

// A run that fails is run again, up to Retries times: a mode that fails
// once recovers, and is measured in every round.
func TestRunnerRetriesFailedRound(t *testing.T) {
	none := &fakeMode{name: "none", seen: -1}
	peer := &fakeMode{name: "auditd", failAt: 3} // w1 round 3, as make demo saw it
	vs, _ := newFakes(none, peer)
	w1 := NewCommand([]string{"/bin/true"})
	w1.Name = "w1"
	var errs []string
	var last Progress
	r := &Runner{Workloads: []*Workload{w1}, Variants: vs, Rounds: 3, WorkDir: t.TempDir(),
		Progress: func(p Progress) {
			last = p
			if p.Err != nil {
				errs = append(errs, p.Err.Error())
			}
		}}
	res, err := r.Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v (a round that succeeded when run again is no failure)", err)
	}
	if peer.runs != 4 {
		t.Errorf("auditd started %d times, want 4 (3 rounds, one run again)", peer.runs)
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "running it again") {
		t.Errorf("progress errors %q: want the failed try, said to be run again", errs)
	}
	if last.Done != last.Total || last.Total != 6 {
		t.Errorf("progress ends at %d/%d, want 6/6", last.Done, last.Total)
	}
	for _, x := range res {
		if x.Mode != "auditd" {
			continue
		}
		if x.Rounds != 3 || x.Retried != 1 || x.Skipped != "" ||
			!strings.Contains(x.Note, "round 3 failed and was run again: starting auditd: no probes today (run 3)") {
			t.Errorf("auditd: %+v", x)
		}
	}
}

// A mode that fails every try of a round is given up for that workload
// only: the next workload measures it again, and the failure is reported
// once, with its workload.
func TestRunnerFailingModeNextWorkload(t *testing.T) {
	none := &fakeMode{name: "none", seen: -1}
	peer := &fakeMode{name: "laurel", failRuns: []int{2, 3, 4}} // w1 round 2, and both retries
	own := &fakeMode{name: "bad", failRuns: []int{1, 2, 3}}     // w1 round 1
	vs, _ := newFakes(none, peer, own)
	w1 := NewCommand([]string{"/bin/true"})
	w1.Name = "w1"
	w2 := NewCommand([]string{"/bin/true"})
	w2.Name = "w2"
	var last Progress
	r := &Runner{Workloads: []*Workload{w1, w2}, Variants: vs, Rounds: 3, WorkDir: t.TempDir(),
		Progress: func(p Progress) { last = p }}
	res, err := r.Run(context.Background())
	var f *Failures
	if !errors.As(err, &f) || len(f.Peer) != 1 || len(f.Own) != 1 {
		t.Fatalf("err %v: want one peer and one own failure", err)
	}
	if !strings.Contains(f.Peer[0].Error(), "laurel@ssd: w1 round 2, 3 tries: starting laurel: no probes today (run 4)") {
		t.Errorf("peer failure %q: want its workload, round, tries and last cause", f.Peer[0])
	}
	if last.Done != last.Total {
		t.Errorf("progress ends at %d/%d", last.Done, last.Total)
	}
	byKey := map[string]result.Row{}
	for _, x := range res {
		byKey[x.Workload+"/"+x.Mode] = x
	}
	if x := byKey["w1/laurel"]; x.Rounds != 1 || x.Retried != 2 || !strings.Contains(x.Note, "failed: w1 round 2") {
		t.Errorf("w1/laurel: want round 1 kept, 2 retries and the failure: %+v", x)
	}
	if x := byKey["w2/laurel"]; x.Rounds != 3 || x.Skipped != "" || x.Retried != 0 || strings.Contains(x.Note, "failed") {
		t.Errorf("w2/laurel: want measured in every round of the next workload: %+v", x)
	}
	if x := byKey["w1/bad"]; x.Rounds != 0 || !strings.HasPrefix(x.Skipped, "failed: w1 round 1, 3 tries") ||
		!strings.Contains(x.Skipped, "round 1 failed and was run again") {
		t.Errorf("w1/bad: want a failed row with its tries: %+v", x)
	}
	if x := byKey["w2/bad"]; x.Rounds != 3 {
		t.Errorf("w2/bad: want measured in the next workload: %+v", x)
	}
}

func TestRunnerWorkloadFailure(t *testing.T) {
	none := &fakeMode{name: "none", seen: -1}
	vs, calls := newFakes(none)
	w := NewCommand([]string{"/bin/sh", "-c", "echo broken >&2; exit 3"})
	r := &Runner{Workloads: []*Workload{w}, Variants: vs, Rounds: 1, WorkDir: t.TempDir()}
	_, err := r.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "broken") {
		t.Errorf("err = %v, want the exit status and stderr", err)
	}
	// Stop runs even when the workload failed: it removes rules and probes.
	if got := strings.Join(*calls, ","); got != "none setup,none start /bin/sh -c echo broken >&2; exit 3 r1,none stop /bin/sh -c echo broken >&2; exit 3 r1,none teardown" {
		t.Errorf("calls = %s", got)
	}
}

func TestRunnerInterrupted(t *testing.T) {
	none := &fakeMode{name: "none", seen: -1}
	vs, calls := newFakes(none)
	w := NewCommand([]string{"/bin/sleep", "30"})
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runner{Workloads: []*Workload{w}, Variants: vs, Rounds: 3, WorkDir: t.TempDir(),
		Progress: func(Progress) {}}
	go func() {
		for {
			none.mu.Lock()
			n := len(*none.calls)
			none.mu.Unlock()
			if n >= 2 { // started
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	_, err := r.Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	got := strings.Join(*calls, ",")
	if !strings.HasSuffix(got, "none stop /bin/sleep 30 r1,none teardown") {
		t.Errorf("calls = %s: want stop and teardown after Ctrl-C", got)
	}
}

// Past MinRounds only the modes whose cost is still within noise run, with
// the floor of any such backend.
func TestRunnerSettled(t *testing.T) {
	w := &Workload{Name: "w"}
	mk := func(name string, ratios ...float64) *variantState {
		st := &variantState{v: Variant{Mode: &fakeMode{name: name}}, ready: true, samples: map[*Workload][]Sample{}}
		for i, x := range ratios {
			st.samples[w] = append(st.samples[w], Sample{Round: i + 1, Elapsed: x})
		}
		return st
	}
	base := mk("none", 1, 1)
	audit := mk("audit", 5, 5.5)       // settled: far above 1x
	floor := mk("audit-floor", 4, 4.4) // settled, and so is its backend
	ebpf := mk("ebpf", 1.02, 0.99)     // within noise: another round
	efloor := mk("ebpf-floor", 3, 3.3) // settled, but ebpf is not
	got := (&Runner{}).settled([]*variantState{base, audit, floor, ebpf, efloor}, base, w)
	want := map[string]bool{"audit": true, "audit-floor": true, "ebpf": false, "ebpf-floor": false}
	for _, st := range []*variantState{audit, floor, ebpf, efloor} {
		if got[st] != want[st.v.Mode.Name()] {
			t.Errorf("%s settled %v, want %v", st.v.Mode.Name(), got[st], want[st.v.Mode.Name()])
		}
	}
}

// A peer mode's failure is told apart from this tool's own.
func TestRunnerPeerFailure(t *testing.T) {
	none := &fakeMode{name: "none", seen: -1}
	peer := &fakeMode{name: "bpftrace", failRuns: []int{1, 2, 3}}
	vs, _ := newFakes(none, peer)
	r := &Runner{Workloads: []*Workload{NewCommand([]string{"/bin/true"})}, Variants: vs, Rounds: 1, WorkDir: t.TempDir()}
	_, err := r.Run(context.Background())
	var f *Failures
	if !errors.As(err, &f) || len(f.Own) != 0 || len(f.Peer) != 1 {
		t.Errorf("err %v: want one peer failure", err)
	}
}

// Under a budget a mode is settled once its interval overlaps neither
// neighbour's: two modes of the same cost keep running, one far from both
// does not; a paced workload is ranked by the watcher's CPU per event.
func TestRankedOn(t *testing.T) {
	w := &Workload{Name: "w"}
	paced := &Workload{Name: "exec-rate", Rate: 300, Known: true, Expected: Tally{Exec: 101, Fork: 100}}
	mk := func(name string, ratios ...float64) *variantState {
		st := &variantState{v: Variant{Mode: &fakeMode{name: name}}, ready: true, samples: map[*Workload][]Sample{},
			failed: map[*Workload]error{}}
		for i, x := range ratios {
			st.samples[w] = append(st.samples[w], Sample{Round: i + 1, Elapsed: x})
			// 201 events: x µs of CPU per event.
			st.samples[paced] = append(st.samples[paced], Sample{Round: i + 1, Elapsed: 1, TracerCPU: x * 201e-6})
		}
		return st
	}
	base := mk("none", 1, 1, 1)
	a := mk("ebpf", 1.02, 0.99, 1.01)
	b := mk("ebpf-floor", 1.0, 1.03, 0.98)
	c := mk("audit", 7, 7.4, 6.8)
	d := mk("auditd", 40, 38, 43)
	got := rankedOn([]*variantState{base, a, b, c, d}, base, w)
	for st, want := range map[*variantState]bool{a: false, b: false, c: true, d: true} {
		if got[st] != want {
			t.Errorf("%s ranked %v, want %v", st.v.Mode.Name(), got[st], want)
		}
	}
	if _, ok := got[base]; ok {
		t.Error("none is the baseline, not ranked")
	}
	// Paced: by CPU per event; ebpf-floor has no watcher and no figure.
	b.samples[paced] = []Sample{{Round: 1, Elapsed: 1}, {Round: 2, Elapsed: 1}, {Round: 3, Elapsed: 1}}
	got = rankedOn([]*variantState{base, a, b, c, d}, base, paced)
	for st, want := range map[*variantState]bool{a: true, b: true, c: true, d: true} {
		if got[st] != want {
			t.Errorf("paced: %s ranked %v, want %v", st.v.Mode.Name(), got[st], want)
		}
	}
}

// A spent budget ends a workload's rounds at MinRounds; the next workload
// still gets its MinRounds.
func TestRunnerBudgetSpent(t *testing.T) {
	none := &fakeMode{name: "none", seen: -1}
	a := &fakeMode{name: "a", seen: 1}
	b := &fakeMode{name: "b", seen: 1}
	vs, _ := newFakes(none, a, b)
	w1 := NewCommand([]string{"/bin/true"})
	w1.Name = "w1"
	w2 := NewCommand([]string{"/bin/true"})
	w2.Name = "w2"
	var last Progress
	r := &Runner{Workloads: []*Workload{w1, w2}, Variants: vs, Rounds: 10, MinRounds: 3, Budget: time.Nanosecond,
		WorkDir: t.TempDir(), Progress: func(p Progress) { last = p }}
	res, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range res {
		if x.Rounds != 3 {
			t.Errorf("%s/%s: %d rounds, want 3 (the budget is spent)", x.Workload, x.Mode, x.Rounds)
		}
	}
	if last.Done != 18 {
		t.Errorf("progress ends at %d/%d, want 18 runs", last.Done, last.Total)
	}
}
