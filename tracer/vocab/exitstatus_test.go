// SPDX-License-Identifier: Apache-2.0

package vocab

import "testing"

func TestDecodeWaitStatus(t *testing.T) {
	cases := []struct {
		status uint32
		want   ExitStatus
	}{
		{0x0000, ExitStatus{Exited: true, Code: 0}},
		{0x0300, ExitStatus{Exited: true, Code: 3}},
		{0xff00, ExitStatus{Exited: true, Code: 255}},                // exit(-1)
		{0x0009, ExitStatus{Signal: 9}},                              // SIGKILL
		{0x008b, ExitStatus{Signal: 11, CoreDumped: true}},           // SIGSEGV, core dumped
		{0x000b, ExitStatus{Signal: 11}},                             // SIGSEGV, no core (ulimit -c 0)
		{0x0086, ExitStatus{Signal: 6, CoreDumped: true}},            // abort(3)
		{0x000d, ExitStatus{Signal: 13}},                             // SIGPIPE
		{0x0040, ExitStatus{Signal: 64}},                             // SIGRTMAX
		{0x137f, ExitStatus{}},                                       // stopped by SIGSTOP: not an exit
		{0xffff, ExitStatus{}},                                       // continued
		{0x10300, ExitStatus{Exited: true, Code: 3}},                 // bits above 15 are not the code
		{0x0080 | 0x0300, ExitStatus{Exited: true, Code: 3}},         // the core bit means nothing without a signal
		{0x0100 | 0x000f, ExitStatus{Signal: 15, CoreDumped: false}}, // stray high bits with a signal
	}
	for _, c := range cases {
		got := DecodeWaitStatus(c.status)
		if got != c.want {
			t.Errorf("DecodeWaitStatus(%#x) = %+v, want %+v", c.status, got, c.want)
		}
	}
	for _, s := range []ExitStatus{{Exited: true, Code: 7}, {Signal: 9}, {Signal: 11, CoreDumped: true}} {
		if back := DecodeWaitStatus(s.WaitStatus()); back != s {
			t.Errorf("round trip of %+v gave %+v", s, back)
		}
	}
}
