// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

func TestEncodeField(t *testing.T) {
	for _, c := range []struct{ value, want string }{
		{"/bin/true", `cmd="/bin/true"`},
		{"sh -c true", "cmd=7368202D632074727565"},
		{`say"hi"`, "cmd=73617922686922"},
		{"tab\there", "cmd=7461620968657265"},
		{"caf\u00e9", "cmd=636166C3A9"},
		{"", `cmd=""`},
	} {
		if got := EncodeField("cmd", c.value); got != c.want {
			t.Errorf("EncodeField(cmd, %q) = %s, want %s", c.value, got, c.want)
		}
	}
}

// The message reaches the audit trail: the multicast copy, which every
// reader of the log (auditd included) gets the same way, carries it with
// the kernel's own fields in front.
func TestWriteUserMessage(t *testing.T) {
	tracertest.LockAudit(t)
	tracertest.EnableAudit(t)
	log := tracertest.OpenAuditLog(t)
	nonce := fmt.Sprintf("tracer-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	text := "op=tracer-test " + EncodeField("nonce", nonce) + " " + EncodeField("cmd", "sh -c 'x y'") + " res=success"
	if err := WriteUserMessage(text); err != nil {
		t.Fatalf("WriteUserMessage: %v", err)
	}
	rec, ok := log.WaitFor(t, UserMessageType, 10*time.Second, nonce)
	if !ok {
		t.Fatal("the message did not appear in the audit trail within 10s")
	}
	t.Logf("record: %s", rec)
	if !strings.Contains(rec, fmt.Sprintf("pid=%d ", os.Getpid())) || !strings.Contains(rec, "msg='"+text+"'") {
		t.Errorf("record %q: want the kernel's pid=%d and msg='%s'", rec, os.Getpid(), text)
	}
	if err := WriteUserMessage(strings.Repeat("x", userMessageMax+1)); err == nil {
		t.Error("an over-long message was sent")
	}
}
