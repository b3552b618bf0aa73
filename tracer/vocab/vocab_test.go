// SPDX-License-Identifier: Apache-2.0

package vocab

import "testing"

func TestParseSignalsAndTypes(t *testing.T) {
	for in, want := range map[string]int{"10": 10, "USR1": 10, "sigusr1": 10, "SIGRTMIN+2": 36, "0": 0} {
		if n, err := ParseSignal(in); err != nil || n != want {
			t.Errorf("ParseSignal(%q) = %d, %v; want %d", in, n, err, want)
		}
	}
	for _, bad := range []string{"SIGFOO", "65", "-1", "RTMIN+40"} {
		if _, err := ParseSignal(bad); err == nil {
			t.Errorf("ParseSignal(%q): no error", bad)
		}
	}
	if _, err := ParseTypes("exec,open"); err == nil {
		t.Error("ParseTypes accepted open")
	}
	if ts, _ := ParseTypes("all"); ts.String() != "exec,fork,signal,exit" {
		t.Errorf("all = %s", ts)
	}
	if SignalName(36) != "SIGRTMIN+2" || SignalName(0) != "SIG0" || SignalName(9) != "SIGKILL" {
		t.Error("SignalName")
	}
}
