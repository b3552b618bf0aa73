// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// traceAs runs `tracer trace --user NAME --format json -o FILE -- CMD` and
// returns CMD's stdout and the report.
func traceAs(t *testing.T, backend, name string, cmd ...string) (string, traceJSON) {
	t.Helper()
	if backend == "audit" {
		tracertest.LockAudit(t)
	}
	out := filepath.Join(t.TempDir(), "trace.json")
	args := append([]string{"trace", "--backend", backend, "--user", name, "--format", "json", "-o", out, "--"}, cmd...)
	code, stdout, stderr := runTracer(t, nil, args...)
	if code != 0 {
		t.Fatalf("tracer %q: exit %d, stderr %q", args, code, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var r traceJSON
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("report %s: %v", data, err)
	}
	return stdout, r
}

// CMD runs as the user, and the counts are those of the same command run
// as root: one exec (the held step's), nothing else.
func TestTraceUser(t *testing.T) {
	tracertest.NeedRoot(t)
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody on this node")
	}
	idPath, _ := filepath.EvalSymlinks("/usr/bin/id")
	for _, backend := range []string{"ebpf", "audit"} {
		t.Run(backend, func(t *testing.T) {
			stdout, r := traceAs(t, backend, "nobody", "/usr/bin/id", "-u")
			if stdout != nobody.Uid+"\n" {
				t.Errorf("id -u printed %q, want nobody's uid %s", stdout, nobody.Uid)
			}
			want := "exec[tracer," + idPath + "]=1 totals={Exec:1 Fork:0 Signal:0 Exit:0 Lost:0} exit=0"
			if got := shape(r); got != want {
				t.Errorf("counts:\n got  %s\n want %s", got, want)
			}
		})
	}
}

// The user's primary gid and supplementary groups, and no capabilities
// left: the kernel's view of CMD.
func TestTraceUserGroupsAndCapabilities(t *testing.T) {
	tracertest.NeedRoot(t)
	name, u := userWithGroups(t)
	stdout, r := traceAs(t, "ebpf", name, "/bin/grep", "-E", "^(Uid|Gid|Groups|CapPrm|CapEff|CapAmb):", "/proc/self/status")
	fields := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		k, v, _ := strings.Cut(l, ":")
		fields[k] = strings.Fields(v)
	}
	four := func(id string) []string { return []string{id, id, id, id} } // real, effective, saved, fs
	if !slices.Equal(fields["Uid"], four(u.Uid)) || !slices.Equal(fields["Gid"], four(u.Gid)) {
		t.Errorf("Uid %v Gid %v, want all %s and %s", fields["Uid"], fields["Gid"], u.Uid, u.Gid)
	}
	groups, _ := u.GroupIds()
	slices.Sort(groups)
	got := slices.Sorted(slices.Values(fields["Groups"]))
	if !slices.Equal(got, groups) {
		t.Errorf("supplementary groups %v, want %v", got, groups)
	}
	for _, c := range []string{"CapPrm", "CapEff", "CapAmb"} {
		if len(fields[c]) != 1 || strings.Trim(fields[c][0], "0") != "" {
			t.Errorf("%s %v, want none", c, fields[c])
		}
	}
	if r.Totals.Exec != 1 || r.ExitCode != 0 {
		t.Errorf("report %s", shape(r))
	}
}

// userWithGroups finds a user who has a supplementary group besides the
// primary one, or nobody as the fallback.
func userWithGroups(t *testing.T) (string, *user.User) {
	t.Helper()
	data, _ := os.ReadFile("/etc/group")
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Split(l, ":")
		if len(f) < 4 || f[3] == "" {
			continue
		}
		for _, m := range strings.Split(f[3], ",") {
			if u, err := user.Lookup(m); err == nil && u.Uid != "0" {
				return m, u
			}
		}
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user with groups and no nobody on this node")
	}
	return "nobody", u
}

// An unknown user is bad input: one line, exit status 2, nothing run and
// no report file; no root needed to say so.
func TestTraceUnknownUser(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "trace.json")
	marker := filepath.Join(dir, "ran")
	code, stdout, stderr := runTracer(t, nil, "trace", "--backend", "ebpf", "--user", "no-such-user-4242", "-o", out, "--", "touch", marker)
	if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "unknown --user") || stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and one line about the user", code, stdout, stderr)
	}
	for _, f := range []string{out, marker} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s exists: something was run or written", filepath.Base(f))
		}
	}
}

// The held step runs with asynchronous preemption off (its runtime's
// SIGURGs would count as CMD's signals), and CMD gets the environment
// tracer had, GODEBUG included or left out.
func TestTraceHeldStepSignalsNothing(t *testing.T) {
	tracertest.NeedRoot(t)
	for _, godebug := range []string{"", "madvdontneed=1"} {
		out := filepath.Join(t.TempDir(), "trace.json")
		cmd := exec.Command(tracerBin, "trace", "--backend", "ebpf", "--format", "json", "-o", out, "--", "/usr/bin/env")
		cmd.Env = envWithout(os.Environ(), "GODEBUG")
		if godebug != "" {
			cmd.Env = append(cmd.Env, "GODEBUG="+godebug)
		}
		stdout, err := cmd.Output()
		if err != nil {
			t.Fatalf("trace: %v", err)
		}
		var got []string
		for _, l := range strings.Split(string(stdout), "\n") {
			if strings.HasPrefix(l, "GODEBUG=") {
				got = append(got, l)
			}
		}
		want := []string{"GODEBUG=" + godebug}
		if godebug == "" {
			want = nil
		}
		if !slices.Equal(got, want) {
			t.Errorf("tracer run with GODEBUG %q: CMD saw %q", godebug, got)
		}
		data, _ := os.ReadFile(out)
		var r traceJSON
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		if r.Totals.Signal != 0 || r.Totals.Exec != 1 || r.Totals.Fork != 0 {
			t.Errorf("counts %s, want one exec and nothing else", shape(r))
		}
	}
}

// envWithout returns env without the variable name.
func envWithout(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
