package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer"
)

// procEvent is what counting needs of one event: its class, the process
// that made it, the parent (exec) and the new process (fork).
type procEvent struct {
	Type  tracer.EventType
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
// record the whole node, so membership is rebuilt from the log: a fork event
// of a member adds its child, and an exec whose parent is a member adds the
// execing process. Events of one tree may be logged out of order (a child
// can exec on one CPU before its parent's clone returns on another), so
// membership is grown to a fixed point before anything is counted. threads
// are thread ids of the root process: forks that made them are set apart.
// A pid cannot be reused inside one short run (the node would have to fork
// pid_max times), so no time window is needed.
func countTree(evs []procEvent, root uint32, threads map[uint32]bool) treeCount {
	in := map[uint32]bool{root: true}
	for changed := true; changed; {
		changed = false
		for _, e := range evs {
			switch {
			case e.Type == tracer.TypeFork && in[e.PID] && e.Child != 0 && !in[e.Child] && !threads[e.Child]:
				in[e.Child], changed = true, true
			case e.Type == tracer.TypeExec && !in[e.PID] && e.PPID != 0 && in[e.PPID]:
				in[e.PID], changed = true, true
			}
		}
	}
	var c treeCount
	for _, e := range evs {
		if !in[e.PID] {
			continue
		}
		switch e.Type {
		case tracer.TypeExec:
			c.Exec++
		case tracer.TypeFork:
			switch {
			case e.Child == 0:
				c.FailedForks++
			case threads[e.Child]:
				c.ThreadForks++
			default:
				c.Fork++
			}
		case tracer.TypeSignal:
			c.Signal++
		}
	}
	c.Procs = len(in)
	return c
}

// readJSONLog reads the events of a `tracer watch --format json` log.
func readJSONLog(r io.Reader) ([]procEvent, error) {
	var out []procEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256<<10), 16<<20)
	var line struct {
		Type     string `json:"type"`
		PID      uint32 `json:"pid"`
		PPID     uint32 `json:"ppid"`
		ChildPID uint32 `json:"child_pid"`
	}
	n := 0
	for sc.Scan() {
		n++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		line.Type, line.PID, line.PPID, line.ChildPID = "", 0, 0, 0
		if err := json.Unmarshal(b, &line); err != nil {
			return nil, fmt.Errorf("event log line %d: %w", n, err)
		}
		t, err := tracer.ParseTypes(line.Type)
		if err != nil {
			return nil, fmt.Errorf("event log line %d: %w", n, err)
		}
		e := procEvent{PID: line.PID, PPID: line.PPID, Child: line.ChildPID}
		for _, tt := range tracer.AllTypes {
			if t.Has(tt) {
				e.Type = tt
			}
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading event log: %w", err)
	}
	return out, nil
}

func readJSONLogFile(path string) ([]procEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening event log: %w", err)
	}
	defer f.Close()
	return readJSONLog(f)
}

// audit arch values with __AUDIT_ARCH_64BIT clear are 32-bit ABIs.
const auditArch64 = 0x80000000

// readAuditLog reads the SYSCALL records that carry key from an auditd log
// (RAW or ENRICHED format): one record per event. Only the raw fields before
// the ENRICHED separator (0x1d) are used.
func readAuditLog(r io.Reader, key string) ([]procEvent, error) {
	var out []procEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256<<10), 16<<20)
	want := `key="` + key + `"`
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "type=SYSCALL ") {
			continue
		}
		if i := strings.IndexByte(line, 0x1d); i >= 0 {
			line = line[:i]
		}
		if !strings.Contains(line, want) {
			continue
		}
		e, ok := parseAuditSyscall(line)
		if ok {
			out = append(out, e)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading audit log: %w", err)
	}
	return out, nil
}

func parseAuditSyscall(line string) (procEvent, bool) {
	var e procEvent
	var nr, exit int64
	var arch uint64
	success := false
	for _, f := range strings.Fields(line) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		switch k {
		case "arch":
			arch, _ = strconv.ParseUint(v, 16, 64)
		case "syscall":
			nr, _ = strconv.ParseInt(v, 10, 64)
		case "success":
			success = v == "yes"
		case "exit":
			exit, _ = strconv.ParseInt(v, 10, 64)
		case "pid":
			p, _ := strconv.ParseUint(v, 10, 32)
			e.PID = uint32(p)
		case "ppid":
			p, _ := strconv.ParseUint(v, 10, 32)
			e.PPID = uint32(p)
		}
	}
	e.Type = auditrules.ClassOf(auditrules.SyscallName(int(nr), arch != 0 && arch&auditArch64 == 0))
	if e.Type == tracer.TypeNone {
		return e, false
	}
	if e.Type == tracer.TypeFork && success && exit > 0 {
		e.Child = uint32(exit)
	}
	return e, true
}

func readAuditLogFile(path, key string) ([]procEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening audit log: %w", err)
	}
	defer f.Close()
	return readAuditLog(f, key)
}
