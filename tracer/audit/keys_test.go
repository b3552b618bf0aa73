// SPDX-License-Identifier: Apache-2.0

package audit

import (
	"encoding/hex"
	"testing"
)

func TestKeyMatch(t *testing.T) {
	const pre = `arch=c000003e syscall=62 success=yes exit=0 a0=1133 a1=a a2=0 a3=0 items=0 ppid=1 pid=2 auid=4294967295 uid=0 gid=0 euid=0 suid=0 fsuid=0 egid=0 sgid=0 fsgid=0 tty=(none) ses=4294967295 comm="kill" exe="/usr/bin/kill" subj=unconfined`
	keys := [][]byte{[]byte("tracer"), []byte("user_cmds")}
	for _, c := range []struct {
		body string
		want bool
	}{
		{pre + ` key="tracer"`, true},
		{pre + ` key="user_cmds"`, true},
		{pre + ` key="tracer2"`, false},
		{pre + ` key="trace"`, false},
		{pre + ` key=(null)`, false},
		{pre, false},
		// Several keys on one rule: hex of the keys joined by 0x01.
		{pre + ` key=` + hex.EncodeToString([]byte("other\x01user_cmds")), true},
		{pre + ` key=` + hex.EncodeToString([]byte("other\x01more")), false},
		// A comm that spells a key is not the key.
		{`arch=c000003e syscall=62 comm="x key=\"tracer\"" exe="/x" key=(null)`, false},
	} {
		if got := keyMatch([]byte(c.body), keys); got != c.want {
			t.Errorf("keyMatch(...%s) = %v, want %v", c.body[max(0, len(c.body)-40):], got, c.want)
		}
	}
}
