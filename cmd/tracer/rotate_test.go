// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// --output-max-size and --output-keep refuse what cannot work in one
// line, before anything is installed; no root needed.
func TestOutputRotationBadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "events.jsonl")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--output-max-size", "10XB", "-o", out}, "is not a size"},
		{[]string{"--output-max-size", "1.5MB", "-o", out}, "is not a size"},
		{[]string{"--output-max-size", "100", "-o", out}, "give a unit"},
		{[]string{"--output-max-size", "10MB"}, "name one with --output FILE"},
		{[]string{"--output-max-size", "10MB", "-o", "-"}, "name one with --output FILE"},
		{[]string{"--output-keep", "3", "-o", out}, "--output-keep goes with --output-max-size"},
		{[]string{"--output-max-size", "10MB", "--output-keep", "0", "-o", out}, "keep from 1 to 1000"},
		{[]string{"--output-max-size", "10MB", "--output-keep", "5000", "-o", out}, "keep from 1 to 1000"},
	}
	// A directory other users can write: one of them could put a
	// directory at FILE.1 (mkdir /tmp/ev.log.1) and stop rotation for good.
	shared := filepath.Join(t.TempDir(), "shared")
	mustDo(t, os.Mkdir(shared, 0o700), os.Chmod(shared, os.ModeSticky|0o777))
	cases = append(cases, struct {
		args []string
		want string
	}{[]string{"--output-max-size", "10MB", "-o", filepath.Join(shared, "ev.log")}, "other users can write its directory"})
	if os.Geteuid() == 0 {
		// As root: a directory that belongs to nobody, 0755.
		theirs := filepath.Join(t.TempDir(), "theirs")
		mustDo(t, os.Mkdir(theirs, 0o755), os.Chown(theirs, 65534, 65534))
		cases = append(cases, struct {
			args []string
			want string
		}{[]string{"--output-max-size", "10MB", "-o", filepath.Join(theirs, "ev.log")}, "belongs to uid 65534"})
	}
	for _, c := range cases {
		args := append([]string{"watch", "--backend", "ebpf", "--duration", "1s"}, c.args...)
		code, stdout, stderr := runTracer(t, nil, args...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("tracer %v: exit %d, stderr %q; want exit 2 and one line containing %q", args, code, stderr, c.want)
		}
	}
	for _, c := range cases {
		for i, a := range c.args {
			if a == "-o" {
				if _, err := os.Lstat(c.args[i+1]); err == nil {
					t.Errorf("a refused watch created --output %s", c.args[i+1])
				}
			}
		}
	}
}

// A watch writing --output FILE with --output-max-size 1MB --output-keep 2
// under logrotate: two storms of 3,000 signals (about 1.3MB of JSON each),
// FILE renamed and SIGHUP sent between them. SIGHUP does not end the
// watch; FILE is made again at once, 0600; every signal of both storms is
// in the files (FILE, FILE.1, FILE.2 and the renamed one), none past 1MB;
// the links another user left at FILE.1 and FILE.2 were replaced, their
// target untouched; --stats-file counts what the files hold.
func TestWatchOutputRotatesAndReopens(t *testing.T) {
	tracertest.NeedRoot(t)
	// Storms of SIGUSR1 would be counted by the audit tests beside this one.
	tracertest.LockAudit(t)
	const kills = 3000
	const limit = 1_000_000 // 1MB
	storm := buildStorm(t, false)
	// Links nobody left while the directory was theirs to write: rotating
	// in a directory other users can write is refused.
	dir := filepath.Join(t.TempDir(), "tmp")
	mustDo(t, os.Mkdir(dir, 0o755))
	victim := filepath.Join(t.TempDir(), "victim")
	mustDo(t, os.WriteFile(victim, []byte("keep me\n"), 0o644))
	out := filepath.Join(dir, "events.jsonl")
	for _, s := range []string{".1", ".2"} {
		mustDo(t, os.Symlink(victim, out+s), os.Lchown(out+s, 65534, 65534))
	}
	stats := filepath.Join(t.TempDir(), "stats.json")
	w := startWatcher(t, nil, "--backend", "ebpf", "--events", "signal", "--signal", "USR1", "--format", "json",
		"--output", out, "--output-max-size", "1MB", "--output-keep", "2", "--stats-file", stats)
	runStorm := func() int {
		cmd := exec.Command(storm, strconv.Itoa(kills))
		if b, err := cmd.CombinedOutput(); err != nil {
			w.stop(t)
			t.Fatalf("storm: %v %s", err, b)
		}
		return cmd.Process.Pid
	}
	// waitLines waits until the files hold n lines of pid's signals.
	files := []string{out, out + ".1", out + ".2", out + "-20261201"}
	waitLines := func(pid, n int) int {
		got := 0
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			got = 0
			for _, f := range files {
				if _, err := os.Lstat(f); err == nil {
					k, _ := countSignalLines(t, f, pid, 10)
					got += k
				}
			}
			if got >= n {
				break
			}
		}
		return got
	}
	first := runStorm()
	waitLines(first, kills)
	// logrotate: rename, then SIGHUP.
	mustDo(t, os.Rename(out, out+"-20261201"))
	mustDo(t, w.cmd.Process.Signal(syscall.SIGHUP))
	var fi os.FileInfo
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if fi, err = os.Lstat(out); err == nil {
			break
		}
	}
	if err != nil {
		w.stop(t)
		t.Fatalf("FILE not made again after SIGHUP: %v\n%s", err, w.stderr())
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("FILE after SIGHUP: mode %v, want a regular file 0600", fi.Mode())
	}
	second := runStorm()
	waitLines(second, kills)
	w.stop(t)
	if w.cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("watch exit status %d after SIGHUP and SIGTERM, want 0", w.cmd.ProcessState.ExitCode())
	}
	seen, lost, stages := w.summary(t)

	total := 0
	counts := map[int]int{}
	for _, f := range files {
		fi, err := os.Lstat(f)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
			continue
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want a regular file 0600", filepath.Base(f), fi.Mode())
		}
		if fi.Size() > limit {
			t.Errorf("%s: %d bytes, past --output-max-size 1MB", filepath.Base(f), fi.Size())
		}
		a, n := countSignalLines(t, f, first, 10)
		b, _ := countSignalLines(t, f, second, 10)
		counts[first] += a
		counts[second] += b
		total += n
		t.Logf("%s: %d bytes, %d lines (%d of the first storm, %d of the second)", filepath.Base(f), fi.Size(), n, a, b)
	}
	if _, err := os.Lstat(out + ".3"); err == nil {
		t.Error("FILE.3 exists: --output-keep 2")
	}
	if counts[first] != kills || counts[second] != kills {
		t.Errorf("the files hold %d and %d signals of the two storms, want %d each", counts[first], counts[second], kills)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Errorf("the target of the link at FILE.1 now holds %q", head(string(b)))
	}
	if lost != 0 || seen != total {
		t.Errorf("watch saw %d, lost %d (%s); the files hold %d lines", seen, lost, stages, total)
	}
	var sf struct {
		Seen uint64 `json:"events_seen"`
		Lost uint64 `json:"lost_total"`
	}
	b, err := os.ReadFile(stats)
	if err != nil {
		t.Fatalf("--stats-file: %v", err)
	}
	if err := json.Unmarshal(b, &sf); err != nil || sf.Seen != uint64(seen) || sf.Lost != 0 {
		t.Errorf("--stats-file says seen %d, lost %d (%v); the summary %d, %d", sf.Seen, sf.Lost, err, seen, lost)
	}
}

// With stdout, SIGHUP still ends the watch (a terminal's hangup), as a
// normal end: rules or probes removed, the summary printed, exit 0.
func TestWatchStdoutEndsOnSIGHUP(t *testing.T) {
	tracertest.NeedRoot(t)
	w := startWatcher(t, nil, "--backend", "ebpf", "--events", "exec")
	mustDo(t, w.cmd.Process.Signal(syscall.SIGHUP))
	ended := make(chan error, 1)
	go func() {
		<-w.done
		ended <- w.cmd.Wait()
	}()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("watch after SIGHUP: %v\n%s", err, w.stderr())
		}
	case <-time.After(10 * time.Second):
		_ = w.cmd.Process.Kill()
		t.Fatalf("watch to stdout still runs 10 s after SIGHUP:\n%s", w.stderr())
	}
	w.summary(t)
}

// logrotateSnippet is docs/rotation.md's logrotate example, for path,
// with the SIGHUP sent to pid.
func logrotateSnippet(t *testing.T, path string, pid int) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/rotation.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```conf\n")
	conf, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 || !strings.Contains(conf, "systemctl reload tracer.service") {
		t.Fatal("no logrotate snippet that reloads tracer.service in docs/rotation.md")
	}
	conf = strings.ReplaceAll(conf, "/var/log/tracer/events.jsonl", path)
	return strings.ReplaceAll(conf, "systemctl reload tracer.service", "kill -HUP "+strconv.Itoa(pid))
}

// The documented logrotate snippet, run by logrotate itself against a
// watch writing --output FILE: FILE-DATE holds the storm before, the new
// FILE (0600) the storm after, every signal once; the watch goes on.
func TestWatchUnderLogrotate(t *testing.T) {
	tracertest.NeedRoot(t)
	logrotate := tracertest.NeedTool(t, "logrotate", "Debian package logrotate")
	tracertest.LockAudit(t) // storms of SIGUSR1: see TestWatchOutputRotatesAndReopens
	const kills = 2000
	storm := buildStorm(t, false)
	dir := t.TempDir() // 0700: logrotate skips a directory others can write
	out := filepath.Join(dir, "events.jsonl")
	w := startWatcher(t, nil, "--backend", "ebpf", "--events", "signal", "--signal", "USR1", "--format", "json", "--output", out)
	conf := filepath.Join(t.TempDir(), "tracer.logrotate")
	mustDo(t, os.WriteFile(conf, []byte(logrotateSnippet(t, out, w.cmd.Process.Pid)), 0o644))
	runStorm := func() int {
		cmd := exec.Command(storm, strconv.Itoa(kills))
		if b, err := cmd.CombinedOutput(); err != nil {
			w.stop(t)
			t.Fatalf("storm: %v %s", err, b)
		}
		return cmd.Process.Pid
	}
	waitFor := func(path string, pid int) int {
		n := 0
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && n < kills; time.Sleep(50 * time.Millisecond) {
			if _, err := os.Stat(path); err == nil {
				n, _ = countSignalLines(t, path, pid, 10)
			}
		}
		return n
	}
	first := runStorm()
	waitFor(out, first)
	if b, err := exec.Command(logrotate, "-f", "-s", filepath.Join(t.TempDir(), "state"), conf).CombinedOutput(); err != nil {
		w.stop(t)
		t.Fatalf("logrotate: %v\n%s", err, b)
	}
	rotated, _ := filepath.Glob(out + "-*")
	if len(rotated) != 1 {
		w.stop(t)
		t.Fatalf("logrotate made %q, want one FILE-DATE", rotated)
	}
	// The postrotate's SIGHUP has been sent: the new FILE comes at once.
	var fi os.FileInfo
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if fi, err = os.Lstat(out); err == nil {
			break
		}
	}
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		w.stop(t)
		t.Fatalf("FILE after logrotate's SIGHUP: %v %v, want a regular file 0600\n%s", fi, err, w.stderr())
	}
	second := runStorm()
	waitFor(out, second)
	w.stop(t)
	a1, _ := countSignalLines(t, rotated[0], first, 10)
	a2, _ := countSignalLines(t, rotated[0], second, 10)
	b1, _ := countSignalLines(t, out, first, 10)
	b2, _ := countSignalLines(t, out, second, 10)
	t.Logf("%s: %d + %d signals; FILE: %d + %d", filepath.Base(rotated[0]), a1, a2, b1, b2)
	if a1+b1 != kills || a2+b2 != kills || a2 != 0 {
		t.Errorf("first storm %d + %d, second %d + %d (FILE-DATE + FILE): want %d each, the second all in FILE", a1, b1, a2, b2, kills)
	}
	if _, lost, stages := w.summary(t); lost != 0 {
		t.Errorf("lost %d (%s)", lost, stages)
	}
}

// A rotation root cannot do (a directory at FILE.1) leaves FILE within
// --output-max-size: a storm of 2,000 signals (about 900KB of JSON) into a
// 64KiB FILE; what FILE holds plus what the summary counts lost at stage
// output is every event seen; the failed rotations are in the summary,
// --stats-file and nowhere silent.
func TestWatchRotationFailureBounded(t *testing.T) {
	tracertest.NeedRoot(t)
	tracertest.LockAudit(t)
	const kills = 2000
	const limit = 64 << 10
	storm := buildStorm(t, false)
	dir := t.TempDir()
	out := filepath.Join(dir, "events.jsonl")
	mustDo(t, os.Mkdir(out+".1", 0o700))
	stats := filepath.Join(t.TempDir(), "stats.json")
	w := startWatcher(t, nil, "--backend", "ebpf", "--events", "signal", "--signal", "USR1", "--format", "json",
		"--output", out, "--output-max-size", "64KiB", "--output-keep", "1", "--stats-file", stats)
	cmd := exec.Command(storm, strconv.Itoa(kills))
	if b, err := cmd.CombinedOutput(); err != nil {
		w.stop(t)
		t.Fatalf("storm: %v %s", err, b)
	}
	// No wait: the storm's events are in the ring once it has exited, and
	// a stopping eBPF watch reads the ring to its end (watchRun).
	w.stop(t)
	seen, lost, stages := w.summary(t)
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	mine, lines := countSignalLines(t, out, cmd.Process.Pid, 10)
	t.Logf("%d signals: FILE %d bytes, %d lines (%d of the storm); watch saw %d, lost %d (%s)", kills, fi.Size(), lines, mine, seen, lost, stages)
	if fi.Size() > limit {
		t.Errorf("FILE holds %d bytes, past --output-max-size 64KiB", fi.Size())
	}
	if seen < kills {
		t.Errorf("the watch saw %d signals of the storm's %d: the stop did not read the ring to its end", seen, kills)
	}
	if !strings.Contains(stages, "output "+strconv.Itoa(lost)) || lost == 0 || lines+lost != seen {
		t.Errorf("FILE holds %d lines, the summary says %d seen, %d lost (%s): want the rest lost at stage output", lines, seen, lost, stages)
	}
	if !strings.Contains(w.stderr(), "tracer: rotating --output failed") {
		t.Errorf("no line about the failed rotations in watch's stderr:\n%s", w.stderr())
	}
	var sf struct {
		Failed uint64            `json:"output_rotations_failed"`
		Lost   map[string]uint64 `json:"lost"`
	}
	b, err := os.ReadFile(stats)
	if err != nil {
		t.Fatalf("--stats-file: %v", err)
	}
	if err := json.Unmarshal(b, &sf); err != nil || sf.Failed == 0 || sf.Lost["output"] != uint64(lost) {
		t.Errorf("--stats-file: output_rotations_failed %d, lost %v (%v); want failures and %d lost at stage output", sf.Failed, sf.Lost, err, lost)
	}
}
