// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A console where everything went well; the cases below break it.
const goodConsole = `SeaBIOS (version 1.16.2)
Booting from ROM...
TRACER-GUEST KERNEL 6.1.0-57-amd64 cpus 2
TRACER-GUEST START bpfbackend
=== RUN   TestWorkloadEvents
=== RUN   TestWorkloadEvents/default
--- PASS: TestWorkloadEvents (0.30s)
    --- PASS: TestWorkloadEvents/default (0.10s)
=== RUN   TestCountOnly
--- PASS: TestCountOnly (0.20s)
PASS
TRACER-GUEST END bpfbackend 0
TRACER-GUEST START audit
=== RUN   TestKnownWorkloadExactCounts
--- PASS: TestKnownWorkloadExactCounts (0.13s)
PASS
TRACER-GUEST END audit 0
TRACER-GUEST DONE
[   34.150137] reboot: Power down
`

func problemsOf(t *testing.T, console string) []string {
	t.Helper()
	c, err := parseConsole(strings.NewReader(strings.ReplaceAll(console, "\n", "\r\n")))
	if err != nil {
		return []string{err.Error()}
	}
	return c.problems([]string{"bpfbackend", "audit"}, false)
}

func TestConsoleGood(t *testing.T) {
	if p := problemsOf(t, goodConsole); len(p) != 0 {
		t.Fatalf("problems in a good run: %q", p)
	}
	c, _ := parseConsole(strings.NewReader(goodConsole))
	if c.Kernel != "6.1.0-57-amd64" || c.CPUs != "2" || len(c.Runs) != 2 {
		t.Fatalf("parsed %+v", c)
	}
	if got, want := c.Runs[0].summary(), "bpfbackend 2/2 passed (subtests 1/1)"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}

// Every way a guest's run can go wrong is a problem: a harness that
// passes what it did not see is caught here, without qemu.
func TestConsoleProblems(t *testing.T) {
	for _, c := range []struct {
		name, from, to, want string
	}{
		{"missing END (hang)", "TRACER-GUEST END audit 0\nTRACER-GUEST DONE\n[   34.150137] reboot: Power down\n", "", "audit: no END marker"},
		{"missing DONE", "TRACER-GUEST DONE\n", "", "no DONE marker"},
		{"never started", "TRACER-GUEST START audit\n=== RUN   TestKnownWorkloadExactCounts\n--- PASS: TestKnownWorkloadExactCounts (0.13s)\nPASS\nTRACER-GUEST END audit 0\n", "", "audit: no START marker"},
		{"no init", "TRACER-GUEST KERNEL 6.1.0-57-amd64 cpus 2\n", "", "no KERNEL marker"},
		{"failed test", "--- PASS: TestCountOnly (0.20s)\nPASS\nTRACER-GUEST END bpfbackend 0", "--- FAIL: TestCountOnly (0.20s)\nFAIL\nTRACER-GUEST END bpfbackend 1", "bpfbackend: TestCountOnly failed"},
		{"failed subtest", "    --- PASS: TestWorkloadEvents/default", "    --- FAIL: TestWorkloadEvents/default", "bpfbackend: TestWorkloadEvents/default failed"},
		{"failed, exit 0", "--- PASS: TestCountOnly (0.20s)", "--- FAIL: TestCountOnly (0.20s)", "tests failed but the binary exited 0"},
		{"exit status", "TRACER-GUEST END audit 0", "TRACER-GUEST END audit 2", "audit: exit status 2"},
		{"pattern matches nothing", "=== RUN   TestKnownWorkloadExactCounts\n--- PASS: TestKnownWorkloadExactCounts (0.13s)\n", "testing: warning: no tests to run\n", "audit: no test ran"},
		{"skipped", "--- PASS: TestKnownWorkloadExactCounts (0.13s)", "--- SKIP: TestKnownWorkloadExactCounts (0.00s)", "audit: TestKnownWorkloadExactCounts skipped"},
		{"test timeout", "PASS\nTRACER-GUEST END audit 0", "panic: test timed out after 3m0s\nTRACER-GUEST END audit 2", "audit: the test binary's -test.timeout ran out"},
		{"kernel panic", "TRACER-GUEST DONE\n", "[   12.0] Kernel panic - not syncing: Attempted to kill init!\n", "the kernel said: [   12.0] Kernel panic"},
	} {
		t.Run(c.name, func(t *testing.T) {
			console := strings.Replace(goodConsole, c.from, c.to, 1)
			if console == goodConsole {
				t.Fatalf("%q is not in the good console", c.from)
			}
			p := problemsOf(t, console)
			if !slices.ContainsFunc(p, func(s string) bool { return strings.Contains(s, c.want) }) {
				t.Errorf("problems %q, want one with %q", p, c.want)
			}
		})
	}
}

// A kernel message written into the middle of the init's line leaves the
// marker readable; an END without its START is an error.
func TestConsoleMarkersInNoise(t *testing.T) {
	c, err := parseConsole(strings.NewReader("[ 1.0] random: crng init doneTRACER-GUEST KERNEL 6.12.1 cpus 2\n"))
	if err != nil || c.Kernel != "6.12.1" {
		t.Errorf("kernel %q, %v", c.Kernel, err)
	}
	if _, err := parseConsole(strings.NewReader("TRACER-GUEST END audit 0\n")); err == nil {
		t.Error("an END without START parsed")
	}
}

func TestParseRuns(t *testing.T) {
	runs, err := parseRuns("# the eBPF backend\n./tracer/bpfbackend ^(TestA|TestB)$\n\n./tracer/bpfbackend ^TestC$ TRACER_X=1 Y=a=b\n./tracer/audit ^TestD$\n")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range runs {
		names = append(names, r.Name)
	}
	if !slices.Equal(names, []string{"bpfbackend", "bpfbackend-2", "audit"}) || !slices.Equal(runs[1].Env, []string{"TRACER_X=1", "Y=a=b"}) || runs[0].Pattern != "^(TestA|TestB)$" {
		t.Errorf("runs %+v", runs)
	}
	for _, bad := range []string{"", "./tracer/audit", "tracer/audit ^T$", "./tracer/audit ^T$ NOTVAR"} {
		if _, err := parseRuns(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// The init runs every binary between its markers, with the guest's
// variables and the pattern quoted for sh, and powers off at the end.
func TestInitScript(t *testing.T) {
	runs, _ := parseRuns("./tracer/audit ^(TestA|TestB)$ X=it's")
	s := initScript(runs, 3*time.Minute)
	for _, want := range []string{
		`echo "TRACER-GUEST START audit"`,
		`env TRACER_TEST_GUEST='1' TRACER_TEST_PREBUILT='/prebuilt' X='it'\''s' /tests/audit.test -test.v -test.count=1 -test.timeout=3m0s -test.run '^(TestA|TestB)$'`,
		`echo "TRACER-GUEST END audit $?"`,
		`echo "TRACER-GUEST DONE"`,
		"poweroff -f",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("init lacks %q:\n%s", want, s)
		}
	}
	if sh, err := exec.LookPath("sh"); err == nil {
		if out, err := exec.Command(sh, "-n", "-c", s).CombinedOutput(); err != nil {
			t.Errorf("sh -n: %v\n%s", err, out)
		}
	}
}

// The initramfs is what the kernel reads: cpio's own reader lists it.
func TestCpioListed(t *testing.T) {
	cpio, err := exec.LookPath("cpio")
	if err != nil {
		t.Skip("no cpio to read the archive back")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := newTree()
	tr.add("tests/a.test", 0o755, src)
	tr.addData("init", 0o755, []byte("#!/bin/sh\n"))
	tr.symlinks["bin/sh"] = "busybox"
	var buf bytes.Buffer
	if err := tr.write(&buf, []string{"proc"}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cpio, "-itv", "--quiet")
	cmd.Stdin = &buf
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cpio -t: %v\n%s", err, out)
	}
	for _, want := range []string{"crw-------", "dev/console", "drwxr-xr-x", " proc", "-rwxr-xr-x", " init", "tests/a.test", "bin/sh -> busybox"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("cpio -t lacks %q:\n%s", want, out)
		}
	}
}
