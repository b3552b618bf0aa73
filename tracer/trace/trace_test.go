// SPDX-License-Identifier: Apache-2.0

//go:build linux

package trace

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// The test binary is its own held step: Options.Self is os.Args[0].
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == HeldCommand {
		RunHeld(os.Args[2:])
	}
	os.Exit(m.Run())
}

// fakeBackend records what Run asked of it. At Start it checks that the
// command it is scoped to is still held (has not exec'd), and Run emits
// the events in emit as the scoped command's, as a backend that saw the
// tree would.
type fakeBackend struct {
	startErr error
	emit     []tracer.Event

	mu            sync.Mutex
	cfg           tracer.Config
	heldAtStart   bool
	started, runs int
	closes        int
	calls         []string
}

func (f *fakeBackend) Name() string { return "fake" }

func (f *fakeBackend) Start(cfg tracer.Config) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "start")
	f.cfg = cfg
	f.started++
	if cfg.PID != 0 {
		f.heldAtStart = isHeld(cfg.PID)
	}
	return f.startErr
}

func (f *fakeBackend) Run(ctx context.Context, emit func(*tracer.Event)) error {
	f.mu.Lock()
	f.runs++
	evs, pid := f.emit, f.cfg.PID
	f.mu.Unlock()
	for i := range evs {
		e := evs[i]
		e.PID = pid // the tree's root made them
		emit(&e)
	}
	<-ctx.Done()
	return ctx.Err()
}

func (f *fakeBackend) Stats() tracer.Stats { return tracer.Stats{} }

func (f *fakeBackend) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closes++
	return nil
}

// isHeld reports whether pid is still this test binary's held step. Right
// after exec returns to the parent the kernel may not have set the new
// program's arguments yet (cmdline reads empty for a moment): wait for them.
func isHeld(pid uint32) bool {
	for range 1000 {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/cmdline")
		if err != nil {
			return false
		}
		if len(data) > 0 {
			return bytes.Contains(data, []byte(HeldCommand))
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// counter is a fakeBackend that counts in the kernel.
type counter struct {
	*fakeBackend
	counts *tracer.Counts
}

func (c counter) Counts() (*tracer.Counts, error) { return c.counts, nil }

// scoper is a fakeBackend that follows the tree by login uid.
type scoper struct {
	*fakeBackend
	linked []string
}

func (s *scoper) LinkLoginUID(auid uint32, pid int, cmd []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "link")
	s.linked = append(s.linked, strconv.Itoa(int(auid)), strconv.Itoa(pid), strings.Join(cmd, " "))
	return nil
}

func run(t *testing.T, b tracer.Backend, o Options) (*Result, string) {
	t.Helper()
	var out bytes.Buffer
	o.Backend, o.Self, o.Stdout = b, os.Args[0], &out
	if o.Config.Types == 0 {
		o.Config = tracer.DefaultConfig()
	}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res, out.String()
}

// A backend that follows the tree by pid gets the held command's pid
// before the command execs, events reach the counts, and the command's
// output and exit status come through.
func TestRunScopesByPID(t *testing.T) {
	f := &fakeBackend{}
	f.emit = []tracer.Event{
		{Type: vocab.TypeExec, Comm: "sh", Filename: "/usr/bin/grep"},
		{Type: vocab.TypeExec, Comm: "sh", Filename: "/usr/bin/grep"},
		{Type: vocab.TypeFork, Comm: "sh", ChildPID: 2},
	}
	res, out := run(t, f, Options{Args: []string{"sh", "-c", "echo hello; exit 3"}})
	if out != "hello\n" || res.Report.ExitCode != 3 {
		t.Errorf("command printed %q and exited %d, want hello and 3", out, res.Report.ExitCode)
	}
	if f.cfg.PID == 0 || f.cfg.PID != res.PID || !f.heldAtStart {
		t.Errorf("backend scoped to pid %d (held at Start: %v), command was %d", f.cfg.PID, f.heldAtStart, res.PID)
	}
	if f.cfg.ScopeAUID != vocab.UnsetID || res.AUID != vocab.UnsetID || f.cfg.CountOnly {
		t.Errorf("config %+v, auid %d: want no login uid and streaming", f.cfg, res.AUID)
	}
	c := res.Report.Counts
	if c.Exec[tracer.ExecKey{Comm: "sh", Filename: "/usr/bin/grep"}] != 2 || c.Fork["sh"] != 1 {
		t.Errorf("counts %+v, want 2 execs of grep and 1 fork by sh", c)
	}
	if res.Report.Backend != "fake" || f.closes == 0 {
		t.Errorf("report backend %q, %d closes", res.Report.Backend, f.closes)
	}
	if res.Report.Rusage.Elapsed <= 0 {
		t.Errorf("rusage %+v", res.Report.Rusage)
	}
}

// A KernelCounter counts in the kernel unless events are asked for.
func TestRunKernelCounter(t *testing.T) {
	kc := tracer.NewCounts()
	kc.Fork["make"] = 42
	for _, stream := range []bool{false, true} {
		f := &fakeBackend{emit: []tracer.Event{{Type: vocab.TypeFork, Comm: "sh"}}}
		res, _ := run(t, counter{f, kc}, Options{Args: []string{"true"}, StreamEvents: stream})
		if f.cfg.CountOnly == stream {
			t.Errorf("StreamEvents %v: CountOnly %v", stream, f.cfg.CountOnly)
		}
		want := map[string]uint64{"make": 42}
		if stream {
			want = map[string]uint64{"sh": 1}
		}
		if got := res.Report.Counts.Fork; len(got) != len(want) || got["make"] != want["make"] || got["sh"] != want["sh"] {
			t.Errorf("StreamEvents %v: forks %v, want %v", stream, got, want)
		}
	}
}

// --events decides what is counted and printed, whatever the backend
// counted to follow the tree: a backend scoped by pid is given forks to
// follow, and its kernel counts have them, asked for or not.
func TestRunKernelCountsOnlyAskedEvents(t *testing.T) {
	kc := tracer.NewCounts()
	kc.Fork["sh"] = 2
	kc.SetTotal(vocab.TypeFork, 2)
	kc.Exec[tracer.ExecKey{Comm: "sh", Filename: "/bin/true"}] = 1
	kc.SetTotal(vocab.TypeExec, 1)
	kc.Signals[tracer.SignalKey{Comm: "sh", Target: 7, Signal: 15}] = 1
	kc.SetTotal(vocab.TypeSignal, 1)
	cfg := tracer.DefaultConfig()
	cfg.Types = 1 << vocab.TypeSignal
	f := &fakeBackend{}
	res, _ := run(t, counter{f, kc}, Options{Args: []string{"true"}, Config: cfg})
	if !f.cfg.Types.Has(vocab.TypeFork) {
		t.Fatalf("backend types %v: the test needs a backend that follows forks", f.cfg.Types)
	}
	c := res.Report.Counts
	if len(c.Fork) != 0 || len(c.Exec) != 0 || c.Total(vocab.TypeFork) != 0 || c.Total(vocab.TypeExec) != 0 {
		t.Errorf("--events signal: forks %v (total %d), execs %v (total %d); want none", c.Fork, c.Total(vocab.TypeFork), c.Exec, c.Total(vocab.TypeExec))
	}
	if len(c.Signals) != 1 || c.Total(vocab.TypeSignal) != 1 {
		t.Errorf("--events signal: signals %v (total %d), want the one", c.Signals, c.Total(vocab.TypeSignal))
	}
}

// A LoginUIDScoper gets a login uid of the command's own instead of a pid,
// the command runs with it, and the link to the caller is written after
// Start.
func TestRunScopesByLoginUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("setting a login uid needs CAP_AUDIT_CONTROL: run as root")
	}
	s := &scoper{fakeBackend: &fakeBackend{}}
	res, out := run(t, s, Options{Args: []string{"cat", "/proc/self/loginuid"}})
	if s.cfg.PID != 0 || s.cfg.ScopeAUID == vocab.UnsetID || s.cfg.ScopeAUID != res.AUID {
		t.Errorf("config pid %d auid %d, result auid %d: want the command's own login uid", s.cfg.PID, s.cfg.ScopeAUID, res.AUID)
	}
	if strings.TrimSpace(out) != strconv.Itoa(int(res.AUID)) {
		t.Errorf("the command's login uid is %q, want %d", out, res.AUID)
	}
	want := []string{strconv.Itoa(int(res.AUID)), strconv.Itoa(int(res.PID)), "cat /proc/self/loginuid"}
	if strings.Join(s.calls, ",") != "start,link" || strings.Join(s.linked, "|") != strings.Join(want, "|") {
		t.Errorf("calls %v, linked %q; want start,link and %q", s.calls, s.linked, want)
	}
}

// A backend that fails to start leaves no command behind, is closed, and
// its error comes back as it was.
func TestRunStartFails(t *testing.T) {
	cause := errors.New("no probes")
	f := &fakeBackend{startErr: vocab.Usagef("cannot attach: %w", cause)}
	marker := t.TempDir() + "/ran"
	_, err := Run(context.Background(), Options{Backend: f, Config: tracer.DefaultConfig(), Self: os.Args[0],
		Args: []string{"touch", marker}})
	if !errors.Is(err, cause) || !errors.Is(err, vocab.ErrUsage) {
		t.Errorf("Run: %v; want the backend's usage error with its cause", err)
	}
	if f.closes == 0 || f.runs != 0 {
		t.Errorf("%d closes, %d runs", f.closes, f.runs)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran although the backend never started")
	}
	if f.heldAtStart && isHeld(f.cfg.PID) {
		t.Errorf("held step %d still running", f.cfg.PID)
	}
}

// A command that cannot be found is the user's to fix, before anything starts.
func TestRunUnknownCommand(t *testing.T) {
	f := &fakeBackend{}
	_, err := Run(context.Background(), Options{Backend: f, Config: tracer.DefaultConfig(), Self: os.Args[0],
		Args: []string{"/nonexistent/tracer-no-such-command"}})
	if !errors.Is(err, vocab.ErrUsage) || f.started != 0 {
		t.Errorf("Run: %v, %d starts; want a usage error and no Start", err, f.started)
	}
}

// --user: the command runs as that user, with its groups.
func TestRunAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing user needs root")
	}
	cred, err := LookupUser("nobody")
	if err != nil {
		t.Skip(err)
	}
	f := &fakeBackend{}
	_, out := run(t, f, Options{Args: []string{"id", "-u"}, Cred: cred})
	if strings.TrimSpace(out) != strconv.Itoa(int(cred.Uid)) {
		t.Errorf("id -u printed %q, want %d", out, cred.Uid)
	}
	if _, err := LookupUser("tracer-no-such-user"); !errors.Is(err, vocab.ErrUsage) {
		t.Errorf("unknown user: %v", err)
	}
}
