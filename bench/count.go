// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auparse"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// procEvent is what counting needs of one event: its class, the process
// that made it, the parent (exec) and the new process (fork).
type procEvent struct {
	Type  vocab.Type
	PID   uint32
	PPID  uint32
	Child uint32
}

// treeCount is what a mode saw of one workload's process tree.
type treeCount struct {
	Tally
	// ThreadForks are fork events that created a thread of a GoRuntime
	// workload: the runtime's, not the workload's, so not in Tally.
	ThreadForks int64
	// FailedForks are fork calls that made no process: most are clones the
	// kernel restarts because a signal arrived (ERESTARTNOINTR), which the
	// audit log records twice. Not in Tally: no process was made.
	FailedForks int64
	Procs       int // processes in the tree
}

// countTree counts the events of the process tree rooted at root. Watchers
// record the whole node, so membership is rebuilt from the log with
// tracer.ProcTree, grown to a fixed point before anything is counted since
// events of one tree may be logged out of order. threads are thread ids of
// the root process: forks that made them are set apart, and add no member.
// A pid cannot be reused inside one short run (the node would have to fork
// pid_max times), so no time window is needed.
func countTree(evs []procEvent, root uint32, threads map[uint32]bool) treeCount {
	tree := tracer.NewProcTree(root)
	tree.Grow(len(evs), func(i int) (vocab.Type, uint32, uint32, uint32) {
		e := evs[i]
		child := e.Child
		if threads[child] {
			child = 0
		}
		return e.Type, e.PID, e.PPID, child
	})
	var c treeCount
	for _, e := range evs {
		if !tree.Has(e.PID) {
			continue
		}
		switch e.Type {
		case vocab.TypeExec:
			c.Exec++
		case vocab.TypeFork:
			switch {
			case e.Child == 0:
				c.FailedForks++
			case threads[e.Child]:
				c.ThreadForks++
			default:
				c.Fork++
			}
		case vocab.TypeSignal:
			c.Signal++
		}
	}
	c.Procs = tree.Len()
	return c
}

// countAll counts the events of a mode that watched the workload's own
// cgroup (Run.Own): every one is the workload's, but those of the marker
// processes bench ran there.
func countAll(evs []procEvent, markers []int) treeCount {
	var c treeCount
	for _, e := range evs {
		if slices.Contains(markers, int(e.PID)) {
			continue
		}
		switch e.Type {
		case vocab.TypeExec:
			c.Exec++
		case vocab.TypeFork:
			c.Fork++
		case vocab.TypeSignal:
			c.Signal++
		}
	}
	return c
}

// readJSONLog reads the events of a `tracer watch --format json` log with
// the tracer's own decoder (tracer.Event's UnmarshalJSON).
func readJSONLog(r io.Reader) ([]procEvent, error) {
	var out []procEvent
	err := eachJSONEvent(r, func(e *tracer.Event, _ []byte) {
		out = append(out, procEvent{Type: e.Type, PID: e.PID, PPID: e.PPID, Child: e.ChildPID})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachJSONEvent calls f with each event of a JSON log and its line; both
// are reused.
func eachJSONEvent(r io.Reader, f func(e *tracer.Event, line []byte)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256<<10), 16<<20)
	var e tracer.Event
	n := 0
	for sc.Scan() {
		n++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		if err := e.UnmarshalJSON(b); err != nil {
			return fmt.Errorf("event log line %d: %w", n, err)
		}
		f(&e, b)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading event log: %w", err)
	}
	return nil
}

func readJSONLogFile(path string) ([]procEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening event log: %w", err)
	}
	defer f.Close()
	return readJSONLog(f)
}

// readAuditLog reads the SYSCALL records that carry key from an auditd log
// (RAW or ENRICHED format): one record per event.
func readAuditLog(r io.Reader, key string) ([]procEvent, error) {
	var out []procEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256<<10), 16<<20)
	for sc.Scan() {
		rec, k, ok := auditLogSyscall(sc.Bytes())
		if !ok || k != key {
			continue
		}
		if e, ok := syscallEvent(rec); ok {
			out = append(out, e)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading audit log: %w", err)
	}
	return out, nil
}

// auditLogSyscall reads a line of auditd's log with the audit backend's
// parser: the fields of a SYSCALL record and its key; ok is false for
// any other line.
func auditLogSyscall(line []byte) (rec auparse.Syscall, key string, ok bool) {
	typ, msg, ok := auparse.LogRecord(line)
	if !ok || typ != "SYSCALL" {
		return rec, "", false
	}
	_, _, body, err := auparse.Header(msg)
	if err != nil {
		return rec, "", false
	}
	auparse.ParseSyscall(body, &rec)
	key, _ = auparse.Field(body, "key")
	return rec, key, true
}

// syscallEvent is what counting needs of a SYSCALL record, named through
// the one arch table (auditrules); ok is false for a syscall that makes no
// process event.
func syscallEvent(rec auparse.Syscall) (procEvent, bool) {
	e := procEvent{PID: rec.PID, PPID: rec.PPID}
	e.Type = auditrules.ClassOf(auditrules.ArchSyscallName(rec.Arch, rec.Syscall))
	if e.Type == vocab.TypeNone {
		return e, false
	}
	// A fork that failed made no process (the backend drops it; counting
	// keeps it apart as a failed fork).
	if e.Type == vocab.TypeFork && rec.HasExit && rec.Exit > 0 {
		e.Child = uint32(rec.Exit)
	}
	return e, true
}

// parseAuditSyscall reads one line of auditd's log as a process event.
func parseAuditSyscall(line string) (procEvent, bool) {
	rec, _, ok := auditLogSyscall([]byte(line))
	if !ok {
		return procEvent{}, false
	}
	return syscallEvent(rec)
}

func readAuditLogFile(path, key string) ([]procEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening audit log: %w", err)
	}
	defer f.Close()
	return readAuditLog(f, key)
}
