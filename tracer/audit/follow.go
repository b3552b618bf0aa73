// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/elastic/go-libaudit/v2/rule"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Follow makes the backend read the records of rules the node loaded and
// add none of its own: those with one of keys, or with existing every
// loaded rule's. Call it before Start. Without it, a node whose rules are
// locked (enabled=2) is followed by the keys of its loaded rules that
// record what the watch asks for.
func (b *Backend) Follow(keys []string, existing bool) {
	b.fo.keys, b.fo.existing = keys, existing
}

// Following reports what the backend follows after Start: the keys (none
// with Any), or false when it runs its own rules.
func (b *Backend) Following() (auditrules.Follow, bool) {
	return b.fo.plan, b.fo.on
}

// followState is the backend's state when it follows the node's rules.
type followState struct {
	keys     []string
	existing bool
	on       bool
	plan     auditrules.Follow
	// fence is the text of the user message whose record ends the drain:
	// with no rule of its own to remove, the backend marks the end of
	// the kernel's queue with a record of its own.
	fence []byte
}

// startFollow is Start for a backend that follows the node's rules.
func (b *Backend) startFollow(locked bool) error {
	rules, err := b.ctl.GetRules()
	if err != nil {
		return fmt.Errorf("listing audit rules: %w", err)
	}
	texts := make([]string, 0, len(rules))
	for _, wf := range rules {
		if text, err := rule.ToCommandLine(rule.WireFormat(wf), false); err == nil {
			texts = append(texts, text)
		}
	}
	var plan auditrules.Follow
	if len(b.fo.keys) > 0 || b.fo.existing {
		plan, err = auditrules.PlanFollow(texts, b.fo.keys, b.fo.existing, b.cfg.Types)
	} else {
		plan, err = auditrules.PlanLocked(texts, b.cfg.Types)
	}
	if err != nil {
		return err
	}
	b.fo.plan, b.fo.on = plan, true
	if err := b.setup(); err != nil {
		return err
	}
	b.newReassembler()
	if !plan.Any {
		b.r.keys = make([][]byte, len(plan.Keys))
		for i, k := range plan.Keys {
			b.r.keys[i] = []byte(k)
		}
	}
	b.excluded.Store(uint32(excludedTypes(rules)))
	if excludedTypes(rules).has(recSyscall) {
		return vocab.Usagef("the node's audit rules exclude SYSCALL records (-a never,exclude -F msgtype=SYSCALL): the audit backend would see no event; remove that rule, or use --backend ebpf")
	}
	b.note(followLine(plan, locked, b.cfg.Types))
	b.startPoller()
	b.started.Store(true)
	return nil
}

// followLine is the one line that says what a following backend reads.
func followLine(plan auditrules.Follow, locked bool, want vocab.TypeSet) string {
	why := ""
	if locked {
		why = "audit rules are locked (enabled=2): "
	}
	keys := "keys " + strings.Join(plan.Keys, ",")
	switch {
	case plan.Any && len(plan.Keys) == 0:
		keys = "every key"
	case plan.Any:
		keys = "every key (" + strings.Join(plan.Keys, ",") + ")"
	case len(plan.Keys) == 1:
		keys = "key " + plan.Keys[0]
	}
	s := fmt.Sprintf("%sfollowing the node's audit rules, adding none: %s, %d %s recording %s events", why, keys, plan.Rules, plural(plan.Rules, "rule", "rules"), plan.Covers)
	if miss := want &^ plan.Covers; miss != 0 {
		s += fmt.Sprintf("; no followed rule records %s events", miss)
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// multicastProbeTimeout is how long a record of our own may take to come
// back on the multicast group before the group is taken to deliver
// nothing.
const multicastProbeTimeout = 1500 * time.Millisecond

// ErrNoMulticast says the kernel does not deliver audit records to the
// multicast group; callers add what the user can do.
var ErrNoMulticast = errors.New("the kernel delivers no audit records to the multicast group")

// MulticastKernel says whether the kernel release (uname -r) has the
// audit multicast group (3.16); RHEL 7's 3.10 kernels bind it but deliver
// nothing, which only the probe can tell on others.
func MulticastKernel(release string) bool {
	maj, rest, _ := strings.Cut(release, ".")
	mn, _, _ := strings.Cut(rest, ".")
	mn = strings.TrimRightFunc(mn, func(r rune) bool { return r < '0' || r > '9' })
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(mn)
	if err1 != nil || err2 != nil {
		return true // unknown: the probe decides
	}
	return a > 3 || a == 3 && b >= 16
}

// kernelRelease is uname -r.
func kernelRelease() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return ""
	}
	var s []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}

// noMulticastHint is what to do where the multicast group delivers
// nothing.
const noMulticastHint = "run tracer as auditd's plugin instead (watch --backend audit --from-auditd, from /etc/audit/plugins.d/tracer.conf; docs/backends.md, \"Following the node's rules\"), or use --backend ebpf"

// checkMulticastKernel refuses a kernel without the audit multicast
// group, by its release, before anything changes on the node.
func checkMulticastKernel() error {
	if rel := kernelRelease(); !MulticastKernel(rel) {
		return vocab.Usagef("%w: kernel %s is older than 3.16, which brought the audit multicast group; %s", ErrNoMulticast, rel, noMulticastHint)
	}
	return nil
}

// earlyRecord is a record the multicast probe read before its own.
type earlyRecord struct {
	typ  uint16
	data []byte
}

// earlyMax bounds the records the probe keeps for Run.
const earlyMax = 1 << 16

// probeMulticast writes a record of its own (a TRUSTED_APP user message)
// and waits for it on c, a socket in the multicast group: where it does
// not come back, the group delivers nothing (RHEL 7's 3.10, a network
// namespace other than the initial one). It reads on the backend's own
// socket, since a second member of the group would make other tracers
// take it for another reader (and give up lean records); the records read
// before its own are kept for Run. Audit must be enabled (the kernel
// drops user messages otherwise). Where the message cannot be written (no
// CAP_AUDIT_WRITE, a PID namespace other than the initial one) there is
// no telling, and no refusal.
func probeMulticast(c *auditstate.Conn) (early []earlyRecord, err error) {
	nonce := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	if err := WriteUserMessage("op=tracer-multicast-probe nonce=" + nonce + " res=success"); err != nil {
		return nil, nil
	}
	want := []byte("nonce=" + nonce)
	bt := auditstate.NewBatch(64, 9000)
	deadline := time.Now().Add(multicastProbeTimeout)
	for time.Now().Before(deadline) {
		n, err := c.ReadBatch(bt)
		if err != nil && !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.ENOBUFS) {
			return early, nil
		}
		for i := 0; i < n; i++ {
			typ, data, ok := bt.Message(i)
			if !ok {
				continue
			}
			if typ == UserMessageType && bytes.Contains(data, want) {
				return early, nil
			}
			if len(early) < earlyMax {
				early = append(early, earlyRecord{typ, bytes.Clone(data)})
			}
		}
	}
	return nil, vocab.Usagef("%w: a record of tracer's own did not arrive on the audit multicast group within %v (RHEL 7's 3.10 kernel binds the group but delivers nothing; so does a network namespace other than the host's); %s", ErrNoMulticast, multicastProbeTimeout, noMulticastHint)
}

// sendFence writes the user message whose record ends a following
// backend's drain, and reports whether it was written.
func (b *Backend) sendFence() bool {
	nonce := fmt.Sprintf("nonce=%d-%d", os.Getpid(), time.Now().UnixNano())
	if WriteUserMessage("op=tracer-drain "+nonce+" res=success") != nil {
		return false
	}
	b.fo.fence = []byte(nonce)
	return true
}

// isFence matches the record of the drain's user message.
func (b *Backend) isFence(typ uint16, data []byte) bool {
	return typ == UserMessageType && b.fo.fence != nil && bytes.Contains(data, b.fo.fence)
}
