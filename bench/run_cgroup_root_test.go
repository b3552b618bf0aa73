// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// TestBenchCgroupScope runs `tracer bench --cgroup SCOPE -- CMD` for real:
// the command must run below SCOPE, and the tracer modes must watch only
// SCOPE. CMD moves one of its own children out of SCOPE (into a sibling
// cgroup) before that child execs and forks: those events belong to the
// workload's process tree, so a watcher that ignored --cgroup would count
// them. Both backends must count exactly the events made inside SCOPE.
func TestBenchCgroupScope(t *testing.T) {
	tracertest.LockAudit(t)
	root := cgroupV2Mount()
	if root == "" {
		t.Skip("no cgroup v2 hierarchy: --cgroup needs one")
	}
	bin := buildTracer(t)
	name := fmt.Sprintf("tracer-scope-test-%d", os.Getpid())
	scope, outside := filepath.Join(root, name), filepath.Join(root, name+"-outside")
	for _, d := range []string{scope, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = removeCgroup(d) })
	}
	dir := t.TempDir()
	where := filepath.Join(dir, "cgroup")
	// Inside SCOPE: sh's exec, its 5 forks and 5 execs of true, the fork
	// of a subshell, the fork and exec of cat: 14 events. The subshell
	// moves itself out ("0" moves the writer) before it does anything:
	// its exec of sh, sh's fork and exec of sleep (which keeps sh alive
	// while the tracers read its cgroup) and of true twice, 7 events, are
	// in the workload's tree but not in SCOPE.
	script := filepath.Join(dir, "scope.sh")
	body := fmt.Sprintf(`for i in 1 2 3 4 5; do /bin/true; done
( echo 0 > %s/cgroup.procs && exec /bin/sh -c '/bin/sleep 0.2; /bin/true; /bin/true' )
/bin/cat /proc/self/cgroup > %s
`, outside, where)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	f, _ := runBench(t, bin, "--cgroup", "/"+name, "--modes", "none,audit,ebpf", "--rounds", "1", "--", "/bin/sh", script)

	b, err := os.ReadFile(where)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := host.ParseProcCgroup(b); !ok || !strings.HasPrefix(got, "/"+name+"/tracer-bench-") {
		t.Errorf("the workload ran in %q, want a cgroup below /%s", b, name)
	}
	if f.Run == nil || f.Run.Cgroup != "/"+name {
		t.Errorf("result file's run: %+v, want cgroup /%s", f.Run, name)
	}
	const inside = 1 + 5 + 5 + 1 + 2
	for _, r := range f.Results {
		if r.Mode == "none" {
			continue
		}
		if r.EventsSeen != inside || r.EventsLost != 0 {
			t.Errorf("%s: %d events seen, %d lost; want exactly %d (the events made inside the cgroup), 0 lost",
				r.Mode, r.EventsSeen, r.EventsLost, inside)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(scope, "tracer-bench-*")); len(m) > 0 {
		t.Errorf("left behind: %v", m)
	}
}
