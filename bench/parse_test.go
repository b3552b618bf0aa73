// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"math"
	"strings"
	"testing"

	libaudit "github.com/elastic/go-libaudit/v2"
)

func TestParseStatCPU(t *testing.T) {
	// A comm with a space and a parenthesis, as comms can be.
	stat := "4242 (tracer (x) y) S 1 4242 4242 0 -1 4194560 1200 0 0 0 250 75 0 0 20 0 9 0 100 1000 300 18446744073709551615"
	got, err := parseStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got-3.25) > 1e-9 {
		t.Errorf("parseStatCPU = %v, want 3.25 (utime 250 + stime 75 ticks)", got)
	}
	if _, err := parseStatCPU("4242 (x) S 1"); err == nil {
		t.Error("short line accepted")
	}
}

// The kernel's audit status as bench reads it over netlink: the figures
// `auditctl -s` printed (enabled 1, failure 1, pid 9154, rate_limit 0,
// backlog_limit 8192, lost 17, backlog 3, backlog_wait_time 60000,
// backlog_wait_time_actual 218), which bench parsed from its text before.
func TestAuditStatusOf(t *testing.T) {
	s := statusOf(&libaudit.AuditStatus{Enabled: 1, Failure: 1, PID: 9154, BacklogLimit: 8192, Lost: 17, Backlog: 3,
		FeatureBitmap:   uint32(libaudit.AuditFeatureBitmapBacklogLimit | libaudit.AuditFeatureBitmapBacklogWaitTime),
		BacklogWaitTime: 60000, BacklogWaitTimeActual: 218})
	want := auditStatus{Enabled: 1, Failure: 1, PID: 9154, BacklogLimit: 8192, Lost: 17, Backlog: 3,
		BacklogWaitTime: 60000, HasWaitTime: true, WaitActual: 218}
	if s != want {
		t.Errorf("statusOf = %+v, want %+v", s, want)
	}
	// A kernel without backlog_wait_time (RHEL 7's 3.10 before it was backported).
	if s := statusOf(&libaudit.AuditStatus{Enabled: 1, BacklogLimit: 320}); s.HasWaitTime {
		t.Errorf("wait time on a kernel without it: %+v", s)
	}
}

func TestParseBpftraceMaps(t *testing.T) {
	out := strings.Split(`Attaching 12 probes...
tracer-bench: watching


@clone_calls[sh]: 1800
@exec_calls[sh, /usr/bin/grep]: 600
@exec_calls[sh, /usr/bin/sed]: 600
@exec_calls[sh, a file: with colons]: 1
@thread_clones[tracer]: 4
@total_exec_calls[sh]: 1201
@total_exec_calls[dash]: 3
@signal_calls[tracer]: 200000
`, "\n")
	m := parseBpftraceMaps(out)
	for name, want := range map[string]int64{"clone_calls": 1800, "exec_calls": 1201, "thread_clones": 4,
		"total_exec_calls": 1204, "signal_calls": 200000} {
		if m[name] != want {
			t.Errorf("@%s = %d, want %d", name, m[name], want)
		}
	}
}

func TestAuditdConfig(t *testing.T) {
	conf := strings.Split("local_events = yes\nlog_file = /var/log/audit/audit.log\n# flush = SYNC\nflush = INCREMENTAL_ASYNC\nfreq = 50\n", "\n")
	if v := confValue(conf, "flush", ""); v != "INCREMENTAL_ASYNC" {
		t.Errorf("flush = %q", v)
	}
	if v := confValue(conf, "max_log_file", "8"); v != "8" {
		t.Errorf("default = %q", v)
	}
	got := withConf(conf, map[string]string{"log_file": "/x/audit.log", "flush": "SYNC", "max_log_file_action": "IGNORE"},
		[]string{"log_file", "max_log_file_action", "flush"})
	want := "local_events = yes\nlog_file = /x/audit.log\n# flush = SYNC\nflush = SYNC\nfreq = 50\nmax_log_file_action = IGNORE\n"
	if got != want {
		t.Errorf("withConf =\n%s\nwant\n%s", got, want)
	}
	rules := ruleSettings("## comment\n-D\n-b 8192\n--backlog_wait_time 60000\n-f 1\n-e 2\n-a always,exit -S kill\n")
	if len(rules) != 3 || rules[0][0] != "-b" || rules[1][0] != "--backlog_wait_time" || rules[2][0] != "-f" {
		t.Errorf("ruleSettings = %v: want -b, --backlog_wait_time, -f and never -D or -e", rules)
	}
}

func TestIsMarker(t *testing.T) {
	rec := "type=SYSCALL msg=audit(1.2:3): arch=c000003e syscall=62 success=yes exit=0 a0=1234 a1=0 a2=0 a3=0 items=0 ppid=1 pid=1234 auid=4294967295 comm=\"tracer\" key=\"tracer\"\x1dARCH=x86_64 SYSCALL=kill\n"
	if !isMarker([]byte(rec), 1234) {
		t.Error("marker record not recognised")
	}
	for _, other := range []string{
		strings.Replace(rec, "a1=0", "a1=a", 1),             // kill(1234, SIGUSR1)
		strings.Replace(rec, "syscall=62", "syscall=39", 1), // getpid
		strings.Replace(rec, "ppid=1 pid=1234", "ppid=1234 pid=99", 1),
	} {
		if isMarker([]byte(other), 1234) {
			t.Errorf("taken for the marker: %s", other)
		}
	}
}
