// SPDX-License-Identifier: Apache-2.0

package host

import "testing"

func TestParseStat(t *testing.T) {
	// A comm with spaces and parentheses, as a process may name itself.
	stat := "4242 (my (odd) comm) S 17 4242 4242 0 -1 4194560 123 0 0 0 5 3 0 0 20 0 1 0 987654 12345678 512 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	ppid, start, ok := ParseStat([]byte(stat))
	if !ok || ppid != 17 || start != 987654 {
		t.Errorf("ParseStat = %d %d %v, want 17 987654 true", ppid, start, ok)
	}
	for _, bad := range []string{"", "4242 (x) S 1 2", "4242 no parens", "4242 (x) S x 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5"} {
		if _, _, ok := ParseStat([]byte(bad)); ok {
			t.Errorf("ParseStat(%q) ok", bad)
		}
	}
}

// ParseProcStat is the one reader of /proc/PID/stat: comm (with spaces
// and parentheses), ppid, CPU times and start time.
func TestParseProcStat(t *testing.T) {
	stat := "4242 (my (odd) comm) S 17 4242 4242 0 -1 4194560 123 0 0 0 5 3 0 0 20 0 1 0 987654 12345678 512 18446744073709551615\n"
	got, ok := ParseProcStat([]byte(stat))
	if want := (ProcStat{Comm: "my (odd) comm", State: 'S', PPID: 17, UTime: 5, STime: 3, Start: 987654}); !ok || got != want {
		t.Errorf("ParseProcStat = %+v %v, want %+v", got, ok, want)
	}
	if _, ok := ParseProcStat([]byte("4242 (x) S 1 4242 4242 0 -1 4194560 123 0 0 0 x 3 0 0 20 0 1 0 987654")); ok {
		t.Error("a bad utime accepted")
	}
}

func TestParseProcCgroup(t *testing.T) {
	cases := []struct {
		file string
		want string
		ok   bool
	}{
		{"0::/system.slice/nginx.service\n", "/system.slice/nginx.service", true},
		// Hybrid: v1 controllers, name=systemd and the unified line.
		{"12:memory:/system.slice/x.service\n1:name=systemd:/system.slice/x.service\n0::/system.slice/x.service\n", "/system.slice/x.service", true},
		// v1 only (RHEL 7): the name=systemd hierarchy.
		{"11:cpuset:/\n4:memory:/user.slice\n1:name=systemd:/user.slice/user-0.slice/session-1.scope\n", "/user.slice/user-0.slice/session-1.scope", true},
		{"4:memory:/x\n", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		got, ok := ParseProcCgroup([]byte(c.file))
		if got != c.want || ok != c.ok {
			t.Errorf("ParseProcCgroup(%q) = %q %v, want %q %v", c.file, got, ok, c.want, c.ok)
		}
	}
}

func TestBootIDAndTicks(t *testing.T) {
	if got := shortBootID([]byte("05cd0fec-bb43-4b24-a6d9-4e9cf9acbab8\n")); got != "05cd0fecbb434b24" {
		t.Errorf("shortBootID = %q", got)
	}
	if shortBootID(nil) != "0" || shortBootID([]byte("not hex")) != "0" {
		t.Error("unreadable boot id must give 0")
	}
	// start_boottime in ns to /proc's clock ticks: rounded down, 10 ms each.
	for ns, want := range map[uint64]uint64{0: 0, 9_999_999: 0, 10_000_000: 1, 9876_543_210_987: 987654} {
		if got := TicksFromNS(ns); got != want {
			t.Errorf("TicksFromNS(%d) = %d, want %d", ns, got, want)
		}
	}
}
