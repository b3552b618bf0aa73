// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// UserMessageType is AUDIT_TRUSTED_APP, the record type of WriteUserMessage:
// a free-form message from a trusted program (AUDIT_USER, 1005, is marked
// deprecated in the kernel's headers). ausearch -m TRUSTED_APP finds it.
const UserMessageType = 1121

// userMessageMax bounds the text: the kernel caps a record's payload at
// MAX_AUDIT_MESSAGE_LENGTH (8970) and prefixes its own fields.
const userMessageMax = 8000

// WriteUserMessage puts text into the node's audit trail as one
// AUDIT_TRUSTED_APP record. The kernel adds the sender's pid, uid, auid,
// session and security context in front of it, then queues it like every
// other record: to auditd (or whoever holds the audit PID), to the
// multicast readers. It needs CAP_AUDIT_WRITE and the initial PID
// namespace; while audit is disabled the kernel accepts the message and
// drops it. Text should be key=value fields, values encoded with
// EncodeField where they may hold spaces or quotes.
//
// It opens a socket of its own: no audit PID, no multicast group, so it
// can run next to a backend or auditd.
func WriteUserMessage(text string) error {
	if len(text) > userMessageMax {
		return fmt.Errorf("audit user message of %d bytes is longer than %d", len(text), userMessageMax)
	}
	c, err := auditstate.NewConn(0)
	if err != nil {
		return err
	}
	defer c.Close()
	// The ack comes at once; the bound only guards against a kernel that
	// never answers.
	if err := c.SetRecvTimeout(5 * time.Second); err != nil {
		return fmt.Errorf("setting audit socket timeout: %w", err)
	}

	// The payload ends in a NUL, as libaudit sends it; the kernel strips it.
	seq, err := c.Send(syscall.NetlinkMessage{
		Header: syscall.NlMsghdr{Type: UserMessageType, Flags: syscall.NLM_F_REQUEST | syscall.NLM_F_ACK},
		Data:   append([]byte(text), 0),
	})
	if err != nil {
		return fmt.Errorf("sending audit user message: %w", err)
	}
	for {
		msgs, err := c.Receive(false, syscall.ParseNetlinkMessage)
		if err != nil {
			return fmt.Errorf("reading the kernel's answer to the audit user message: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Type != syscall.NLMSG_ERROR || m.Header.Seq != seq {
				continue
			}
			if len(m.Data) < 4 {
				return errors.New("short netlink ack to the audit user message")
			}
			if errno := -int32(binary.NativeEndian.Uint32(m.Data[0:4])); errno != 0 {
				return fmt.Errorf("the kernel refused the audit user message: %w", syscall.Errno(errno))
			}
			return nil
		}
	}
}

// EncodeField renders name=value the way audit records carry untrusted
// strings (libaudit's audit_encode_nv_string): "value" in double quotes
// when it is plain printable ASCII without spaces or quotes, otherwise
// upper-case hex without quotes, which ausearch -i decodes.
func EncodeField(name, value string) string {
	for i := 0; i < len(value); i++ {
		if c := value[i]; c == '"' || c < 0x21 || c > 0x7e {
			return name + "=" + strings.ToUpper(hex.EncodeToString([]byte(value)))
		}
	}
	return name + `="` + value + `"`
}

// LinkLoginUID writes one record into the node's audit trail that ties a
// traced command's synthetic login uid (Config.ScopeAUID) to the real login
// uid of whoever ran tracer: every record of the command's tree carries
// only the synthetic one, and the node's auditors must still see who ran
// it. ausearch -m TRUSTED_APP finds it; ausearch -ua <auid_synthetic> finds
// what the command did. Call it after Start: the kernel drops user
// messages while audit is disabled, and Start enables it for the session.
func (b *Backend) LinkLoginUID(auid uint32, pid int, cmd []string) error {
	realAUID := "4294967295" // unset: tracer was not started from a login
	if data, err := os.ReadFile("/proc/self/loginuid"); err == nil {
		realAUID = strings.TrimSpace(string(data))
	}
	// The kernel caps a record near 9 KB and hex doubles the command.
	cmdline := strings.Join(cmd, " ")
	if len(cmdline) > 2048 {
		cmdline = cmdline[:2048]
	}
	text := fmt.Sprintf("op=tracer-trace auid_real=%s auid_synthetic=%d %s pid=%d res=success",
		realAUID, auid, EncodeField("cmd", cmdline), pid)
	if err := WriteUserMessage(text); err != nil {
		return vocab.Usagef("cannot write the audit record that ties the command's login uid %d to yours (%w): trace --backend audit needs CAP_AUDIT_WRITE; or use --backend ebpf", auid, err)
	}
	return nil
}
