// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	libaudit "github.com/elastic/go-libaudit/v2"
	"github.com/elastic/go-libaudit/v2/rule"
	"github.com/elastic/go-libaudit/v2/rule/flags"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// followKey is the key of the rules the tests load as the node's.
const followKey = "tracer-follow-test"

// otherRule records the workload's kill(2) of SIGUSR2 under another key;
// loaded first, it is the rule those records match (the first matching
// exit rule decides, key included).
const otherRule = "-a always,exit -F arch=b64 -S kill -F a1=12 -k tracer-follow-other"

// knownConfig is TestKnownWorkloadExactCounts' configuration.
func knownConfig() tracer.Config {
	cfg := tracer.DefaultConfig()
	cfg.Types, _ = vocab.ParseTypes("all")
	cfg.Signals, _ = vocab.ParseSignals("USR1")
	cfg.ExecFailures = true
	return cfg
}

// nodeRuleTexts is what `tracer rules --key KEY --events all
// --exec-failures --arch b64` prints for cfg.
func nodeRuleTexts(t *testing.T, key string, cfg tracer.Config) []string {
	t.Helper()
	set, err := auditrules.Build(auditrules.Options{
		Arch: "b64", Types: cfg.Types, Signals: vocab.SignalSet{}, ScopeAUID: vocab.UnsetID,
		Key: key, ExecFailures: cfg.ExecFailures,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range set.Rules {
		out = append(out, r.Text())
	}
	return out
}

// loadNodeRules adds rules as auditctl -R would, and deletes them when the
// test ends.
func loadNodeRules(t *testing.T, texts []string) {
	t.Helper()
	c, err := auditstate.Open()
	if err != nil {
		t.Fatal(err)
	}
	var added [][]byte
	t.Cleanup(func() {
		defer c.Close()
		for _, wf := range added {
			if err := c.DeleteRule(wf); err != nil {
				t.Errorf("deleting a rule the test loaded: %v", err)
			}
		}
	})
	for _, text := range texts {
		r, err := flags.Parse(text)
		if err != nil {
			t.Fatalf("parsing %q: %v", text, err)
		}
		wf, err := rule.Build(r)
		if err != nil {
			t.Fatalf("building %q: %v", text, err)
		}
		if err := c.AddRule(wf); err != nil {
			t.Fatalf("loading %q: %v", text, err)
		}
		added = append(added, wf)
	}
}

// signalCounts counts signal events by syscall and signal, whatever the
// signal filter.
func signalCounts(events []tracer.Event) map[string]int {
	got := map[string]int{}
	for _, e := range events {
		if e.Type == vocab.TypeSignal {
			got[e.Syscall+"/"+e.SignalName()]++
		}
	}
	return got
}

// pidComm is the comm of pid ("" for none, or gone).
func pidComm(pid uint32) string {
	if pid == 0 {
		return ""
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func hasNote(b *Backend, want string) bool {
	return slices.ContainsFunc(b.Notes(), func(n string) bool { return strings.Contains(n, want) })
}

// leftAsFound fails t unless, after every other cleanup of the test, the
// audit settings, the audit PID and the rules are as now. Call it first.
// A node's auditd the test paused holds the PID again under a new pid:
// the same program holding it is what counts.
func leftAsFound(t *testing.T) {
	t.Helper()
	st, rules := auditStatus(t), loadedRules(t)
	holder := pidComm(st.PID)
	t.Cleanup(func() {
		now, after := auditStatus(t), loadedRules(t)
		samePID := now.PID == st.PID || (st.PID != 0 && now.PID != 0 && holder != "" && pidComm(now.PID) == holder)
		if now.Enabled != st.Enabled || !samePID || now.Failure != st.Failure || now.BacklogLimit != st.BacklogLimit || now.BacklogWaitTime != st.BacklogWaitTime {
			t.Errorf("audit state not left as found:\n before %+v\n after  %+v", st, now)
		}
		if !slices.Equal(rules, after) {
			t.Errorf("audit rules not left as found:\n before %q\n after  %q", rules, after)
		}
	})
}

// TestFollowKeys: rules `tracer rules --key K` prints, loaded as the
// node's, followed with --keys K, give the known workload's exact counts,
// as tracer's own rules do (TestKnownWorkloadExactCounts); records of
// another key are left out, and no rule is added or removed.
func TestFollowKeys(t *testing.T) {
	tracertest.LockAudit(t)
	leftAsFound(t)
	stBefore := auditStatus(t)
	cfg := knownConfig()
	loadNodeRules(t, append([]string{otherRule}, nodeRuleTexts(t, followKey, cfg)...))
	before := loadedRules(t)

	b := New()
	b.Follow([]string{followKey}, false)
	events, root := runWorkload(t, b, cfg, knownWorkload...)
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := countEvents(events, cfg); !mapsEqual(got, knownCounts) {
		t.Errorf("--keys %s, counts of the workload's tree (root %d):\n got  %v\n want %v", followKey, root, got, knownCounts)
	}
	// SIGUSR2 by kill matched the other key's rule: not followed.
	if got := signalCounts(events); got["kill/SIGUSR2"] != 0 || got["tgkill/SIGUSR2"] != 3 {
		t.Errorf("--keys %s: SIGUSR2 by kill %d (want 0: another key's), by tgkill %d (want 3)", followKey, got["kill/SIGUSR2"], got["tgkill/SIGUSR2"])
	}
	if !hasNote(b, "following the node's audit rules, adding none: key "+followKey+", 4 rules recording exec,fork,signal,exit events") {
		t.Errorf("no note of what is followed: %q", b.Notes())
	}
	if st := b.Stats(); st.TotalLost() != 0 {
		t.Errorf("lost events: %v", st.Lost)
	}
	if after := loadedRules(t); !slices.Equal(before, after) {
		t.Errorf("--keys changed the audit rules:\n before %v\n after  %v", before, after)
	}

	// --rules existing: every loaded rule's records, the other key's too.
	b = New()
	b.Follow(nil, true)
	events, _ = runWorkload(t, b, cfg, knownWorkload...)
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := countEvents(events, cfg); !mapsEqual(got, knownCounts) {
		t.Errorf("--rules existing, counts:\n got  %v\n want %v", got, knownCounts)
	}
	if got := signalCounts(events); got["kill/SIGUSR2"] != 3 || got["tgkill/SIGUSR2"] != 3 {
		t.Errorf("--rules existing: SIGUSR2 by kill %d, by tgkill %d, want 3 and 3", got["kill/SIGUSR2"], got["tgkill/SIGUSR2"])
	}
	if after := loadedRules(t); !slices.Equal(before, after) {
		t.Errorf("--rules existing changed the audit rules:\n before %v\n after  %v", before, after)
	}

	// A key no loaded rule has: a usage error, and nothing left behind.
	b = New()
	b.Follow([]string{"tracer-follow-none"}, false)
	err := b.Start(cfg)
	_ = b.Close()
	if !errors.Is(err, vocab.ErrUsage) || !strings.Contains(err.Error(), "tracer rules --key tracer-follow-none > /etc/audit/rules.d/tracer-follow-none.rules && auditctl -R") {
		t.Errorf("--keys of no loaded rule: %v", err)
	}
	if owners, _ := owners(); len(owners) != 0 {
		t.Errorf("state files left: %+v", owners)
	}
	stAfter := auditStatus(t)
	if stAfter.Enabled != stBefore.Enabled || stAfter.PID != stBefore.PID || stAfter.BacklogLimit != stBefore.BacklogLimit || stAfter.BacklogWaitTime != stBefore.BacklogWaitTime {
		t.Errorf("audit settings not restored:\n before %+v\n after  %+v", stBefore, stAfter)
	}
}

// lockAudit is auditctl -e 2: AUDIT_SET of enabled alone. It cannot be
// undone until reboot.
func lockAudit(t *testing.T) {
	t.Helper()
	c, err := auditstate.NewConn(0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var st [8]uint32
	st[0], st[1] = 1, auditstate.EnabledLocked // mask AUDIT_STATUS_ENABLED, enabled
	data := make([]byte, 4*len(st))
	for i, v := range st {
		binary.NativeEndian.PutUint32(data[4*i:], v)
	}
	if _, err := c.Send(syscall.NetlinkMessage{
		Header: syscall.NlMsghdr{Type: 1001 /* AUDIT_SET */, Flags: syscall.NLM_F_REQUEST | syscall.NLM_F_ACK},
		Data:   data,
	}); err != nil {
		t.Fatalf("locking audit: %v", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for auditStatus(t).Enabled != auditstate.EnabledLocked {
		if time.Now().After(deadline) {
			t.Fatal("audit is not locked 2 s after auditctl -e 2's request")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLockedRulesFollowKeys locks audit (auditctl -e 2), which only a
// reboot undoes: it runs only in a throwaway kernel (make test-kernels,
// TRACER_TEST_GUEST=1). With keyed rules loaded before the lock, watch
// follows them with --keys and, without, by itself; both give the known
// workload's exact counts, and the rule list stays as it was.
func TestLockedRulesFollowKeys(t *testing.T) {
	if os.Getenv("TRACER_TEST_GUEST") != "1" {
		t.Skip("locks audit until reboot (auditctl -e 2): runs only in a throwaway kernel (make test-kernels sets TRACER_TEST_GUEST=1)")
	}
	tracertest.LockAudit(t)
	cfg := knownConfig()
	// The kernel changes no rule once locked, so the test's are loaded
	// for good: enabled first, as a node's rules files do before -e 2.
	c, err := auditstate.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if auditStatus(t).Enabled != auditstate.EnabledLocked {
		for _, text := range append([]string{otherRule}, nodeRuleTexts(t, followKey, cfg)...) {
			r, err := flags.Parse(text)
			if err != nil {
				t.Fatal(err)
			}
			wf, err := rule.Build(r)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.AddRule(wf); err != nil && !strings.Contains(err.Error(), "rule exists") {
				t.Fatalf("loading %q: %v", text, err)
			}
		}
		if err := c.SetEnabled(true, libaudit.WaitForReply); err != nil {
			t.Fatal(err)
		}
		lockAudit(t)
	}
	before := loadedRules(t)

	for _, c := range []struct {
		name string
		keys []string
	}{{"keys", []string{followKey}}, {"auto", nil}} {
		t.Run(c.name, func(t *testing.T) {
			b := New()
			if c.keys != nil {
				b.Follow(c.keys, false)
			}
			events, root := runWorkload(t, b, cfg, knownWorkload...)
			if err := b.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if got := countEvents(events, cfg); !mapsEqual(got, knownCounts) {
				t.Errorf("locked, %s: counts of the workload's tree (root %d):\n got  %v\n want %v", c.name, root, got, knownCounts)
			}
			want := "following the node's audit rules, adding none: key " + followKey
			if c.keys == nil {
				// Auto: every key of the loaded rules that record events.
				want = "following the node's audit rules, adding none: keys tracer-follow-other," + followKey
			}
			if !hasNote(b, "audit rules are locked (enabled=2): "+want) {
				t.Errorf("no note of the locked rules followed (%q): %q", want, b.Notes())
			}
			if got := signalCounts(events); got["kill/SIGUSR2"] != map[bool]int{true: 0, false: 3}[c.keys != nil] {
				t.Errorf("locked, %s: SIGUSR2 by kill %d", c.name, got["kill/SIGUSR2"])
			}
			if after := loadedRules(t); !slices.Equal(before, after) {
				t.Errorf("locked, %s: rules changed:\n before %v\n after  %v", c.name, before, after)
			}
			if auditStatus(t).Enabled != auditstate.EnabledLocked {
				t.Errorf("audit no longer locked")
			}
		})
	}
}

// TestAuditdPluginMatchesMulticast runs the real auditd with this test
// binary as its plugin (TestAuditdPluginHelper: the backend reading
// auditd's output on stdin, --from-auditd), beside a backend that reads
// the multicast group, both following the same keyed rules: the known
// workload gives both the same events, field by field.
func TestAuditdPluginMatchesMulticast(t *testing.T) {
	tracertest.LockAudit(t)
	leftAsFound(t)
	tracertest.PauseNodeAuditd(t)
	tracertest.KeepAuditSettings(t)
	cfg := knownConfig()
	loadNodeRules(t, append([]string{otherRule}, nodeRuleTexts(t, followKey, cfg)...))
	before := loadedRules(t)

	dir := t.TempDir()
	out := filepath.Join(dir, "plugin.gob")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// auditd passes a plugin at most two args.
	conf := "active = yes\ndirection = out\ntype = always\nformat = string\npath = " + self +
		"\nargs = -test.run=^TestAuditdPluginHelper$ " + out + "\n"
	if err := os.MkdirAll(filepath.Join(dir, "plugins.d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plugins.d", "tracer.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	ad := tracertest.StartAuditd(t, dir)

	b := New()
	b.Follow([]string{followKey}, false)
	s := tracertest.StartSession(t, b, cfg)
	multicast, root := s.Workload(tracertest.BuildWorkload(t), knownWorkload...)
	s.Stop()
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := s.Tree(root); len(got) >= len(multicast) {
		multicast = got
	}
	// Stopping auditd stops its plugin, which writes its events.
	ad.Stop(t)
	var plugin tracertest.Collector
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, err := os.ReadFile(out + ".done")
		if err == nil {
			if string(data) != "ok\n" {
				t.Fatalf("the plugin failed: %s", data)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the plugin wrote no events within 10 s of auditd's stop")
		}
		time.Sleep(50 * time.Millisecond)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	dec := gob.NewDecoder(bytes.NewReader(data))
	for {
		var e tracer.Event
		if err := dec.Decode(&e); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("plugin events: %v", err)
			}
			break
		}
		plugin.Emit(&e)
	}
	fromPlugin := plugin.Tree(root)
	if got := countEvents(multicast, cfg); !mapsEqual(got, knownCounts) {
		t.Errorf("multicast counts:\n got  %v\n want %v", got, knownCounts)
	}
	if got := countEvents(fromPlugin, cfg); !mapsEqual(got, knownCounts) {
		t.Errorf("plugin counts:\n got  %v\n want %v", got, knownCounts)
	}
	a, p := eventFields(multicast), eventFields(fromPlugin)
	if !slices.Equal(a, p) {
		t.Errorf("the plugin's events differ from the multicast group's:\n multicast %d %q\n plugin    %d %q", len(a), a, len(p), p)
	}
	t.Logf("multicast and plugin: %d events each of the workload's tree, equal field by field", len(a))
	if after := loadedRules(t); !slices.Equal(before, after) {
		t.Errorf("rules changed:\n before %v\n after  %v", before, after)
	}
}

// eventFields renders what both paths must agree on, sorted.
func eventFields(events []tracer.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, fmt.Sprintf("%s pid=%d ppid=%d uid=%d comm=%s syscall=%s child=%d sig=%d target=%d ret=%d exit=%d file=%s argv=%q",
			e.Type, e.PID, e.PPID, e.UID, e.Comm, e.Syscall, e.ChildPID, e.Signal, e.TargetPID, e.Ret, e.ExitCode, e.Filename, e.Argv))
	}
	slices.Sort(out)
	return out
}

// TestAuditdPluginHelper is the plugin TestAuditdPluginMatchesMulticast
// has auditd start: the backend reading auditd's output on stdin, as
// watch --from-auditd --keys does, writing its events (gob) to the file
// named after the flags, then FILE.done.
func TestAuditdPluginHelper(t *testing.T) {
	out := flag.Arg(0)
	if out == "" || !strings.HasSuffix(out, "plugin.gob") {
		t.Skip("auditd's plugin in TestAuditdPluginMatchesMulticast")
	}
	done := func(msg string) { _ = os.WriteFile(out+".done", []byte(msg+"\n"), 0o600) }
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	b := New()
	b.Follow([]string{followKey}, false)
	b.FromAuditd(os.Stdin)
	if err := b.Start(knownConfig()); err != nil {
		done("Start: " + err.Error())
		return
	}
	f, err := os.Create(out)
	if err != nil {
		done(err.Error())
		return
	}
	enc := gob.NewEncoder(f)
	err = b.Run(ctx, func(e *tracer.Event) { _ = enc.Encode(e) })
	_ = b.Close()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		done("Run: " + err.Error())
		return
	}
	done("ok")
}

// TestMulticastProbe: the probe finds its record on the host's multicast
// group, keeping the records before it, and none in a network namespace
// of its own, where the kernel binds the group but delivers nothing, as
// RHEL 7's 3.10 does: a usage error that names plugin mode.
func TestMulticastProbe(t *testing.T) {
	tracertest.LockAudit(t)
	tracertest.EnableAudit(t)
	probe := func() ([]earlyRecord, error) {
		c, err := auditstate.NewConn(auditstate.GroupReadLog)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		if err := c.SetRecvTimeout(recvTimeout); err != nil {
			return nil, err
		}
		// A record before the probe's: kept for Run.
		if err := WriteUserMessage("op=tracer-probe-test res=success"); err != nil {
			return nil, err
		}
		return probeMulticast(c)
	}
	early, err := probe()
	if err != nil {
		t.Fatalf("host: %v", err)
	}
	if !slices.ContainsFunc(early, func(r earlyRecord) bool {
		return r.typ == UserMessageType && bytes.Contains(r.data, []byte("op=tracer-probe-test"))
	}) {
		t.Errorf("host: the record before the probe's was not kept: %d records", len(early))
	}
	errc := make(chan error, 1)
	go func() {
		// The thread ends with the goroutine: never back in the pool in
		// another namespace.
		runtime.LockOSThread()
		if err := syscall.Unshare(syscall.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		start := time.Now()
		_, err := probe()
		if d := time.Since(start); err != nil && d < multicastProbeTimeout {
			err = fmt.Errorf("refused after %v, before the probe's %v: %w", d, multicastProbeTimeout, err)
		}
		errc <- err
	}()
	err = <-errc
	if !errors.Is(err, ErrNoMulticast) || !errors.Is(err, vocab.ErrUsage) || !strings.Contains(err.Error(), "--from-auditd") {
		t.Errorf("in a network namespace of its own: %v", err)
	}
	t.Logf("in a network namespace of its own: %v", err)
}
