// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// linkTrap makes dir/out -> dir/precious, a file that must stay as it is.
func linkTrap(t *testing.T) (link, target string) {
	t.Helper()
	dir := t.TempDir()
	target = filepath.Join(dir, "precious")
	if err := os.WriteFile(target, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link = filepath.Join(dir, "out")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link, target
}

func checkRefused(t *testing.T, args []string, target string) {
	t.Helper()
	code, stdout, stderr := runTracer(t, nil, args...)
	if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "symbolic link") {
		t.Errorf("tracer %q: exit %d, stdout %q, stderr %q; want exit 2 and one line about the symbolic link", args, code, head(stdout), stderr)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "keep me\n" {
		t.Errorf("tracer %q changed the link's target: %q %v", args, b, err)
	}
}

// Every file tracer creates for the user refuses a symlink as its name
// and leaves the link's target alone; no root needed for these.
func TestOutputFilesRefuseSymlinks(t *testing.T) {
	link, target := linkTrap(t)
	checkRefused(t, []string{"report", "-o", link, reportFixtures[0]}, target)
	checkRefused(t, []string{"--cpuprofile", link, "rules"}, target)
	// bench refuses before it runs anything.
	checkRefused(t, []string{"bench", "--modes", "none", "--workload", "cis-shell", "-o", link}, target)
}

// watch and trace refuse it before anything is installed or run.
func TestStreamOutputRefusesSymlink(t *testing.T) {
	tracertest.NeedRoot(t)
	link, target := linkTrap(t)
	marker := filepath.Join(filepath.Dir(target), "ran")
	checkRefused(t, []string{"watch", "--backend", "ebpf", "--duration", "1s", "-o", link}, target)
	checkRefused(t, []string{"trace", "--backend", "ebpf", "-o", link, "--", "touch", marker}, target)
	if _, err := os.Stat(marker); err == nil {
		t.Error("trace ran its command although --output was refused")
	}
}

func TestOutputFilesMode0600(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "report.md")
	if code, _, stderr := runTracer(t, nil, "report", "-o", out, reportFixtures[0]); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	files := []string{out}
	if os.Geteuid() == 0 {
		tr := filepath.Join(dir, "trace.txt")
		if code, _, stderr := runTracer(t, nil, "trace", "--backend", "ebpf", "-o", tr, "--", "true"); code != 0 {
			t.Fatalf("trace: exit %d: %s", code, stderr)
		}
		files = append(files, tr)
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(f), fi.Mode().Perm())
		}
	}
}

// hostileOutputs makes, in a /tmp-like directory (mode 1777), the names
// another user (nobody, 65534) could leave for root to write to: its own
// file (0666), a FIFO, a hard link to a file of root's, and a directory
// reached through its symbolic link. want is what tracer's one line says.
type hostileOutput struct {
	name, path, want string
	// intact reports what changed where the other user can read it.
	intact func() string
}

func hostileOutputs(t *testing.T) []hostileOutput {
	t.Helper()
	base := t.TempDir()
	sticky := filepath.Join(base, "tmp")
	mustDo(t, os.Mkdir(sticky, 0o755), os.Chmod(sticky, 0o1777))
	nobody := func(p string) { mustDo(t, os.Lchown(p, 65534, 65534)) }
	empty := func(p string) func() string {
		return func() string {
			if b, err := os.ReadFile(p); err != nil || len(b) != 0 {
				return fmt.Sprintf("%s now holds %q (%v)", p, head(string(b)), err)
			}
			return ""
		}
	}

	theirs := filepath.Join(sticky, "out.json")
	mustDo(t, os.WriteFile(theirs, nil, 0o666), os.Chmod(theirs, 0o666))
	nobody(theirs)

	fifo := filepath.Join(sticky, "fifo")
	mustDo(t, syscall.Mkfifo(fifo, 0o666), os.Chmod(fifo, 0o666))
	nobody(fifo)

	secret := filepath.Join(base, "secret")
	mustDo(t, os.WriteFile(secret, []byte("keep me\n"), 0o600))
	hard := filepath.Join(sticky, "hard")
	mustDo(t, os.Link(secret, hard))

	elsewhere := filepath.Join(base, "theirs")
	mustDo(t, os.Mkdir(elsewhere, 0o777), os.Chmod(elsewhere, 0o777))
	nobody(elsewhere)
	link := filepath.Join(sticky, "logs")
	mustDo(t, os.Symlink(elsewhere, link))
	nobody(link)

	return []hostileOutput{
		{"another user's file", theirs, "belongs to uid 65534", empty(theirs)},
		{"a FIFO", fifo, "FIFO", func() string { return "" }},
		{"a hard link to root's file", hard, "hard links", func() string {
			if b, _ := os.ReadFile(secret); string(b) != "keep me\n" {
				return fmt.Sprintf("the linked file now holds %q", head(string(b)))
			}
			return ""
		}},
		{"a symlinked directory in a sticky one", filepath.Join(link, "out.json"), "symbolic link", func() string {
			if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
				return fmt.Sprintf("%d files written in the other user's directory", len(ents))
			}
			return ""
		}},
	}
}

func mustDo(t *testing.T, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// runTracerFor is runTracer with a limit: a run that outlives it hung.
func runTracerFor(t *testing.T, limit time.Duration, args ...string) (code int, stderr string, hung bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, tracerBin, args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, errb.String(), true
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), errb.String(), false
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, errb.String(), false
}

// Every file tracer writes for the user, named where another user left
// something for root to write to, is refused in one line (exit 2) before
// anything runs, without hanging, and nothing is written there.
func TestOutputFilesRefuseHostilePaths(t *testing.T) {
	tracertest.NeedRoot(t)
	for _, h := range hostileOutputs(t) {
		for _, args := range [][]string{
			{"watch", "--backend", "ebpf", "--duration", "1s", "--output", h.path},
			{"watch", "--backend", "ebpf", "--duration", "1s", "--output", "/dev/null", "--stats-file", h.path},
			{"trace", "--backend", "ebpf", "-o", h.path, "--", "true"},
			{"bench", "--modes", "none", "--workload", "cis-shell", "--count", "10", "--rounds", "2", "-o", h.path},
			{"report", "-o", h.path, reportFixtures[0]},
			{"--cpuprofile", h.path, "rules"},
		} {
			code, stderr, hung := runTracerFor(t, 30*time.Second, args...)
			switch {
			case hung:
				t.Errorf("%s: tracer %q hung", h.name, args)
			case code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, h.want):
				t.Errorf("%s: tracer %q: exit %d, stderr %q; want exit 2 and one line with %q", h.name, args, code, head(stderr), h.want)
			}
			if why := h.intact(); why != "" {
				t.Errorf("%s: tracer %q: %s", h.name, args, why)
			}
		}
	}
}

// A symbolic link of root's in a directory only root writes is followed:
// /var/run -> /run and the like keep working.
func TestOutputThroughRootsSymlink(t *testing.T) {
	tracertest.NeedRoot(t)
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	mustDo(t, os.Mkdir(real, 0o700), os.Symlink("real", filepath.Join(dir, "alias")))
	out := filepath.Join(dir, "alias", "report.md")
	if code, _, stderr := runTracer(t, nil, "report", "-o", out, reportFixtures[0]); code != 0 {
		t.Fatalf("report -o %s: exit %d: %s", out, code, stderr)
	}
	if fi, err := os.Stat(filepath.Join(real, "report.md")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("report through root's link: %v %v", fi, err)
	}
}
