package bench

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// The libbpf-tools print a header, then one line per event: a comm of
// exactly 16 columns (%-16s; a comm may hold spaces) where it comes first.
//
//	execsnoop: PCOMM PID PPID RET ARGS
//	exitsnoop: PCOMM PID PPID TID AGE(s) EXIT_CODE
//	sigsnoop:  TIME PID COMM SIG TPID RESULT
const libbpfCommWidth = 16

// sigchld is the signal the kernel sends a parent when its child ends:
// sigsnoop sees it (it traces signals as they are generated), but no
// process sent it, and the other modes count signals sent.
const sigchld = 17

// parseLibbpfLine reads one line of tool's output (execsnoop, exitsnoop or
// sigsnoop) as a process event. An exit stands for the fork that made the
// process (exitsnoop sees no fork): its parent is the forker, the exiting
// process the child. ok is false for headers, SIGCHLD and failed execs
// (execsnoop prints those only with -x).
func parseLibbpfLine(tool, line string) (e procEvent, ok bool) {
	var f []string
	switch tool {
	case "execsnoop", "exitsnoop":
		if len(line) <= libbpfCommWidth || strings.HasPrefix(line, "PCOMM ") {
			return e, false
		}
		f = strings.Fields(line[libbpfCommWidth:])
		if len(f) < 3 {
			return e, false
		}
	case "sigsnoop":
		f = strings.Fields(line)
		if len(f) < 6 || f[0] == "TIME" {
			return e, false
		}
	default:
		return e, false
	}
	num := func(s string) (uint32, bool) {
		n, err := strconv.ParseUint(s, 10, 32)
		return uint32(n), err == nil
	}
	switch tool {
	case "execsnoop":
		pid, ok1 := num(f[0])
		ppid, ok2 := num(f[1])
		if !ok1 || !ok2 || f[2] != "0" {
			return e, false
		}
		return procEvent{Type: vocab.TypeExec, PID: pid, PPID: ppid}, true
	case "exitsnoop":
		pid, ok1 := num(f[0])
		ppid, ok2 := num(f[1])
		if !ok1 || !ok2 {
			return e, false
		}
		return procEvent{Type: vocab.TypeFork, PID: ppid, Child: pid}, true
	}
	// sigsnoop: the comm sits between the pid and the last three columns.
	pid, ok1 := num(f[1])
	sig, err := strconv.Atoi(f[len(f)-3])
	if !ok1 || err != nil || sig == sigchld {
		return e, false
	}
	return procEvent{Type: vocab.TypeSignal, PID: pid}, true
}

// libbpfMarker tells whether line is tool's record of the marker process
// pid (its exec, its exit, or the SIGCHLD its exit sent).
func libbpfMarker(tool, line string, pid int) bool {
	p := strconv.Itoa(pid)
	switch tool {
	case "execsnoop", "exitsnoop":
		if len(line) <= libbpfCommWidth {
			return false
		}
		f := strings.Fields(line[libbpfCommWidth:])
		return len(f) > 0 && f[0] == p
	case "sigsnoop":
		f := strings.Fields(line)
		return len(f) >= 6 && f[1] == p
	}
	return false
}

// readLibbpfOutput reads the events in a tool's output.
func readLibbpfOutput(tool string, r io.Reader) ([]procEvent, error) {
	var out []procEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if e, ok := parseLibbpfLine(tool, sc.Text()); ok {
			out = append(out, e)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s's output: %w", tool, err)
	}
	return out, nil
}

// libbpfLostRe matches what the tools print when the perf buffer dropped
// events: "lost 12 events on CPU #1".
var libbpfLostRe = regexp.MustCompile(`(?i)lost (\d+) events? on CPU`)

// libbpfLost sums the events a tool's stderr says it lost.
func libbpfLost(stderr string) int64 {
	var n int64
	for _, m := range libbpfLostRe.FindAllStringSubmatch(stderr, -1) {
		v, _ := strconv.ParseInt(m[1], 10, 64)
		n += v
	}
	return n
}
