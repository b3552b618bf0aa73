// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"encoding/binary"
	"reflect"
	"slices"
	"testing"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// partiesRecord is a signal or exit record with the tail the signal_generate
// and sched_process_exit programs write.
func partiesRecord(typ vocab.Type, sc uint8, a, sig int32, code int32, xpid uint32, xcomm string, status uint32, result, xflags, xsc uint8) []byte {
	b := smallRecord(typ, sc, a, sig, 0)
	le := binary.LittleEndian
	le.PutUint32(b[offCode:], uint32(code))
	le.PutUint32(b[offXPID:], xpid)
	le.PutUint64(b[offXStart:], 70_000_000) // 7 ticks
	copy(b[offXComm:offXComm+commLen], xcomm)
	le.PutUint32(b[offStatus:], status)
	b[offResult], b[offXFlags], b[offXSyscall] = result, xflags, xsc
	return b
}

func TestDecodeWho(t *testing.T) {
	d := newDecoder()
	var e tracer.Event

	// A fault: the kernel's SIGSEGV to the process itself, delivered.
	raw := partiesRecord(vocab.TypeSignal, 0, 4242, 11, 1, 4242, "segv", 0, 0, xfCode|xfResult|xfKernel|xfTarget, 0)
	if err := d.decode(raw, &e); err != nil {
		t.Fatal(err)
	}
	if e.Syscall != "" || e.Origin != vocab.OriginKernel || !e.HasCode || vocab.SigCodeName(e.Signal, e.Code) != "SEGV_MAPERR" ||
		e.Result != vocab.ResultDelivered || e.TargetComm != "segv" || e.TargetExecID != (tracer.ExecID{PID: 4242, Start: 7}) {
		t.Errorf("kernel SIGSEGV: %+v", e)
	}

	// The signal_generate view of a kill(2): code and result from the kernel.
	raw = partiesRecord(vocab.TypeSignal, 7, 4300, 15, vocab.SIUser, 4300, "sleep", 0, 1, xfCode|xfResult|xfTarget, 0)
	if err := d.decode(raw, &e); err != nil {
		t.Fatal(err)
	}
	if e.Syscall != "kill" || e.Origin != vocab.OriginUser || e.Code != vocab.SIUser || e.Result != vocab.ResultIgnored || e.TargetComm != "sleep" {
		t.Errorf("kill: %+v", e)
	}

	// Killed by SIGTERM from a process's kill(2).
	raw = partiesRecord(vocab.TypeExit, 0, 0, 15, vocab.SIUser, 1, "systemd", 15, 0, xfKilled|xfKiller|xfCode, 7)
	if err := d.decode(raw, &e); err != nil {
		t.Fatal(err)
	}
	want := tracer.KilledBy{Origin: vocab.OriginUser, PID: 1, Comm: "systemd", ExecID: tracer.ExecID{PID: 1, Start: 7}, Code: vocab.SIUser, Syscall: "kill"}
	if !e.Killed() || e.Signal != 15 || e.CoreDumped || e.OOMKill || e.KilledBy != want || e.ExitCode != 0 {
		t.Errorf("killed by SIGTERM: %+v", e)
	}
	if got := string(sink.AppendText(nil, &e)); !endsWith(got, "killed by SIGTERM from systemd (pid 1) via kill") {
		t.Errorf("text: %q", got)
	}

	// A fault that dumped core.
	raw = partiesRecord(vocab.TypeExit, 0, 0, 11, 1, 0, "", 0x8b, 0, xfKilled|xfKiller|xfCode|xfKernel, 0)
	if err := d.decode(raw, &e); err != nil {
		t.Fatal(err)
	}
	if !e.Killed() || e.Signal != 11 || !e.CoreDumped || e.KilledBy.Origin != vocab.OriginKernel || e.KilledBy.Comm != "kernel" || e.Cause() != vocab.CauseCore {
		t.Errorf("SIGSEGV core: %+v", e)
	}

	// The OOM killer.
	raw = partiesRecord(vocab.TypeExit, 0, 0, 9, vocab.SIKernel, 0, "", 9, 0, xfKilled|xfKiller|xfCode|xfKernel|xfOOM, 0)
	if err := d.decode(raw, &e); err != nil {
		t.Fatal(err)
	}
	if !e.OOMKill || e.KilledBy.Comm != "oom-killer" || e.Cause() != vocab.CauseOOM {
		t.Errorf("OOM: %+v", e)
	}
	if got := string(sink.AppendText(nil, &e)); !endsWith(got, "killed by SIGKILL from oom-killer") {
		t.Errorf("text: %q", got)
	}

	// Killed, the sender not seen (the tracer started after it was sent).
	raw = partiesRecord(vocab.TypeExit, 0, 0, 9, 0, 0, "", 9, 0, xfKilled, 0)
	if err := d.decode(raw, &e); err != nil {
		t.Fatal(err)
	}
	if !e.Killed() || e.KilledBy.Seen() {
		t.Errorf("killed, sender unseen: %+v", e)
	}

	// An exit call: the code, nothing else.
	raw = partiesRecord(vocab.TypeExit, 14, 3, 0, 0, 0, "", 0, 0, 0, 0)
	if err := d.decode(raw, &e); err != nil {
		t.Fatal(err)
	}
	if e.Killed() || e.ExitCode != 3 || e.Cause() != vocab.CauseExit {
		t.Errorf("exit 3: %+v", e)
	}
}

func endsWith(s, suffix string) bool {
	return len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix
}

// The records of the kernel's own signals decode without allocating.
func TestDecodeWhoAllocations(t *testing.T) {
	d := newDecoder()
	var e tracer.Event
	raw := partiesRecord(vocab.TypeSignal, 0, 4242, 11, 1, 4242, "segv", 0, 0, xfCode|xfResult|xfKernel|xfTarget, 0)
	_ = d.decode(raw, &e)
	if n := testing.AllocsPerRun(1000, func() { _ = d.decode(raw, &e) }); n != 0 {
		t.Errorf("%v allocations per decode", n)
	}
}

// A record decoded after another, through the decoder's shortcuts for a
// record like the last one (its time alone differs; or its time, sender
// and target: a storm from many processes), gives the event a decoder
// that never saw the last one gives it: whichever byte differs, to
// whatever value.
func TestDecodeLikeTheLastRecord(t *testing.T) {
	le := binary.LittleEndian
	bases := [][]byte{
		stormRecord(5_000_000_000, 4242, 0),
		partiesRecord(vocab.TypeSignal, 0, 4242, 11, 1, 4242, "segv", 0, 0, xfCode|xfResult|xfKernel|xfTarget, 0),
		partiesRecord(vocab.TypeSignal, 9, -1, 15, vocab.SIUser, 0, "", 0, 1, xfCode|xfResult, 0),
		partiesRecord(vocab.TypeExit, 0, 0, 15, vocab.SIUser, 1, "systemd", 15, 0, xfKilled|xfKiller|xfCode, 7),
		smallRecord(vocab.TypeFork, 5, 4300, 0, 0),
	}
	for bi, base := range bases {
		for off := offKtime; off < len(base); off++ {
			if off >= offKtime+4 && off < offKtime+8 {
				continue // a time past the clock's next sync: the decoders' clocks would part
			}
			for _, v := range []byte{0, 1, 0x80, base[off] + 1} {
				rec := slices.Clone(base)
				rec[off] = v
				if off >= offPID && off < offPID+4 && bi == 0 {
					// Another sender and target, as in a storm.
					le.PutUint32(rec[offA:], le.Uint32(rec[offPID:]))
					le.PutUint32(rec[offXPID:], le.Uint32(rec[offPID:]))
				}
				d := newDecoder()
				var last, got, want tracer.Event
				if err := d.decode(base, &last); err != nil {
					t.Fatal(err)
				}
				errGot := d.decode(rec, &got)
				fresh := newDecoder()
				fresh.clock = d.clock
				errWant := fresh.decode(rec, &want)
				if (errGot != nil) != (errWant != nil) || !reflect.DeepEqual(got, want) {
					t.Fatalf("record %d, byte %d = %#x after the record itself:\n got %+v, %v\nwant %+v, %v", bi, off, v, got, errGot, want, errWant)
				}
				// And the record after it: what the decoder kept of it.
				errGot = d.decode(base, &got)
				fresh = newDecoder()
				fresh.clock = d.clock
				errWant = fresh.decode(base, &want)
				if (errGot != nil) != (errWant != nil) || !reflect.DeepEqual(got, want) {
					t.Fatalf("record %d, byte %d = %#x, then the record again:\n got %+v\nwant %+v", bi, off, v, got, want)
				}
			}
		}
	}
}
