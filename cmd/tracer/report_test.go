// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

var reportFixtures = []string{
	"../../bench/report/testdata/web-86-12.json",
	"../../bench/report/testdata/db-legacy-01.json",
}

func TestReportCommand(t *testing.T) {
	code, stdout, stderr := runTracer(t, nil, append([]string{"report"}, reportFixtures[:1]...)...)
	if code != 0 || !strings.HasPrefix(stdout, "# tracer overhead report: web-86-12\n") || stderr != "" {
		t.Errorf("report md: exit %d, stderr %q, stdout starts %q", code, stderr, head(stdout))
	}
	out := filepath.Join(t.TempDir(), "fleet.html")
	code, stdout, stderr = runTracer(t, nil, append([]string{"report", "--format", "html", "-o", out}, reportFixtures...)...)
	if code != 0 || stdout != "" || stderr != "" {
		t.Fatalf("report html: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.Contains(page, "<h2>Fleet</h2>") || strings.Count(page, `<svg class="chart"`) != 2 {
		t.Errorf("html report: %q...", head(page))
	}
	// The same file twice is one node: no fleet of two.
	code, stdout, stderr = runTracer(t, nil, "report", reportFixtures[0], "./"+reportFixtures[0])
	if code != 0 || !strings.HasPrefix(stdout, "# tracer overhead report: web-86-12\n") || strings.Contains(stdout, "## Fleet") {
		t.Errorf("report of one file twice: exit %d, stderr %q, stdout starts %q", code, stderr, head(stdout))
	}
}

func head(s string) string {
	if len(s) > 120 {
		return s[:120]
	}
	return s
}

// Bad input to report and doctor: one line, exit status 2, no output file.
func TestReportDoctorBadInput(t *testing.T) {
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "notjson.json")
	oldSchema := filepath.Join(dir, "schema0.json")
	_ = os.WriteFile(notJSON, []byte("elapsed 3.1s\n"), 0o644)
	_ = os.WriteFile(oldSchema, []byte(`{"schema": 9, "node": {}, "results": []}`), 0o644)
	// Files with nothing to report on, and one that is JSON of another shape.
	bad := map[string]string{"schema-only": `{"schema":2}`, "empty": `{}`, "no-results": `{"schema": 2, "node": {"hostname": "vm", "kernel": "6.1"}}`,
		"list": `[{"schema": 2}]`}
	for name, body := range bad {
		_ = os.WriteFile(filepath.Join(dir, name+".json"), []byte(body), 0o644)
	}
	out := filepath.Join(dir, "out.html")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"report"}, "no result file given"},
		{[]string{"report", filepath.Join(dir, "missing.json")}, "no such file"},
		{[]string{"report", "-o", out, notJSON}, "not JSON (at byte 1"},
		{[]string{"report", "-o", out, reportFixtures[0], oldSchema}, "schema 9"},
		{[]string{"report", "-o", out, filepath.Join(dir, "schema-only.json")}, `has no "node" facts and no "results": nothing to report`},
		{[]string{"report", "-o", out, filepath.Join(dir, "empty.json")}, `has no "schema", no "node" facts and no "results"`},
		{[]string{"report", "-o", out, filepath.Join(dir, "no-results.json")}, `has no "results"`},
		{[]string{"report", filepath.Join(dir, "schema-only.json")}, `nothing to report`},
		{[]string{"report", "-o", out, filepath.Join(dir, "list.json")}, "the file holds a JSON array where an object belongs"},
		{[]string{"doctor", "--bench", filepath.Join(dir, "list.json")}, "the file holds a JSON array where an object belongs"},
		{[]string{"report", "--format", "pdf", "-o", out, reportFixtures[0]}, "unknown --format \"pdf\": use md or html"},
		{[]string{"report", "-o", filepath.Join(dir, "no/such/dir/r.md"), reportFixtures[0]}, "cannot write --output"},
		{[]string{"doctor", "--format", "yaml"}, "unknown --format \"yaml\": use text or json"},
		{[]string{"doctor", "--bench", filepath.Join(dir, "missing.json")}, "no such file"},
		{[]string{"doctor", "extra"}, "unknown command"},
	}
	for _, c := range cases {
		code, stdout, stderr := runTracer(t, nil, c.args...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("tracer %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, head(stdout), stderr, c.want)
		}
		if strings.Contains(stderr, "Go value") || strings.Contains(stderr, "result.") {
			t.Errorf("tracer %q: %q speaks Go", c.args, stderr)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed report left an output file")
	}
}

// A report written under sudo belongs to the user who ran sudo, who opens
// it in a browser without root; --mode shares it.
func TestReportFileOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the file is given to SUDO_UID")
	}
	t.Setenv("SUDO_UID", "65534")
	t.Setenv("SUDO_GID", "65534")
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		perm os.FileMode
	}{{nil, 0o600}, {[]string{"--mode", "0644"}, 0o644}} {
		out := filepath.Join(dir, "r.html")
		_ = os.Remove(out)
		args := append([]string{"report", "--format", "html", "-o", out}, c.args...)
		if code, _, stderr := runTracer(t, nil, append(args, reportFixtures[0])...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(out, &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != 65534 || st.Gid != 65534 || os.FileMode(st.Mode).Perm() != c.perm {
			t.Errorf("%v: owner %d:%d mode %o, want 65534:65534 %o", args, st.Uid, st.Gid, os.FileMode(st.Mode).Perm(), c.perm)
		}
	}
	if code, _, stderr := runTracer(t, nil, "report", "-o", filepath.Join(dir, "x.md"), "--mode", "999", reportFixtures[0]); code != 2 || strings.Count(stderr, "\n") != 1 {
		t.Errorf("--mode 999: exit %d, stderr %q: want one line and exit 2", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.md")); err == nil {
		t.Error("--mode 999 left a file")
	}
}
