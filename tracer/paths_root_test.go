// SPDX-License-Identifier: Apache-2.0

//go:build linux

package tracer_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// A program run through a symlink, from a directory on a tmpfs mounted
// below the test's: both backends name the program by its resolved path
// and the directory across the mount; the eBPF walk of a directory 40
// deep keeps its last 32 names, without the leading "/".
func TestCredsPathsBothBackends(t *testing.T) {
	tracertest.LockAudit(t)
	base, err := os.MkdirTemp("", "tracer-paths-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	mnt := filepath.Join(base, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(mnt, unix.MNT_DETACH) })
	work := filepath.Join(mnt, "work")
	names := []string{}
	for i := range 40 {
		names = append(names, "d"+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	deep := filepath.Join(append([]string{work}, names...)...)
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(base, "workload-real")
	copyFile(t, tracertest.BuildWorkload(t), real)
	if err := os.Chmod(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "workload-link")
	if err := os.Symlink("workload-real", link); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	self = resolved(t, self)

	cfg := tracer.DefaultConfig()
	cfg.Types, _ = vocab.ParseTypes("all")
	for _, r := range idBackends() {
		t.Run(r.name, func(t *testing.T) {
			cfg.Probes = r.probes
			s := tracertest.StartSession(t, r.b, cfg)
			cmd := exec.Command(link, "exec", "1", "/bin/true", "exit", "0")
			cmd.Dir = work
			execs := runTree(t, s, cmd)
			cmd = exec.Command(link, "exec", "1", "/bin/true", "exit", "0")
			cmd.Dir = deep
			deepExec := runTree(t, s, cmd)["/bin/true"]
			s.Stop()

			// The test's own exec of the link: the program before it is
			// this test's (a child that has not exec'd yet runs its
			// parent's).
			if e := execs[link]; e.Exe != self || e.Cwd != work {
				t.Errorf("exec of %s: exe %q cwd %q, want %q %q", link, e.Exe, e.Cwd, self, work)
			}
			if e := execs["/bin/true"]; e.Exe != real || e.Cwd != work {
				t.Errorf("exec of /bin/true: exe %q cwd %q, want the resolved program %q, %q", e.Exe, e.Cwd, real, work)
			}
			want := deep
			if r.name != "audit" {
				want = strings.Join(strings.Split(deep, "/")[strings.Count(deep, "/")+1-32:], "/")
			}
			if deepExec.Cwd != want || deepExec.Exe != real {
				t.Errorf("exec 40 directories deep: cwd %q exe %q, want %q %q", deepExec.Cwd, deepExec.Exe, want, real)
			}
			t.Logf("exe %q cwd %q; 40 deep: cwd %q", execs["/bin/true"].Exe, execs["/bin/true"].Cwd, deepExec.Cwd)
		})
	}
}
