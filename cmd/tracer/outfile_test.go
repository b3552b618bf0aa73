package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	checkRefused(t, []string{"bench", "--modes", "none", "--workload", "cis-shell", "--out", link}, target)
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
