// SPDX-License-Identifier: Apache-2.0

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

// execsnoopLine is a line of execsnoop's output. With -U a UID column
// (%-6d) comes before the comm; Args are the arguments as printed: the
// filename (not argv[0]) and argv[1:], joined by spaces, or with -q each in
// double quotes (execsnoopArgs splits them).
type execsnoopLine struct {
	UID       uint32
	PID, PPID uint32
	Ret       int
	Args      string
}

// parseExecsnoop reads a line of execsnoop's output; uidColumn says it ran
// with -U. ok is false for the header and lines it cannot read.
func parseExecsnoop(line string, uidColumn bool) (e execsnoopLine, ok bool) {
	if uidColumn {
		// "%-6d" then the comm: the uid is the line's first digits.
		i := 0
		for i < len(line) && line[i] >= '0' && line[i] <= '9' {
			i++
		}
		uid, err := strconv.ParseUint(line[:i], 10, 32)
		if err != nil {
			return e, false
		}
		e.UID = uint32(uid)
		line = line[max(i, 6):]
	}
	if len(line) <= libbpfCommWidth || strings.HasPrefix(line, "PCOMM ") {
		return e, false
	}
	rest := line[libbpfCommWidth:]
	var f [3]string
	for i := range f {
		rest = strings.TrimLeft(rest, " ")
		j := strings.IndexByte(rest, ' ')
		if j < 0 {
			j = len(rest)
		}
		f[i], rest = rest[:j], rest[j:]
	}
	pid, err1 := strconv.ParseUint(f[0], 10, 32)
	ppid, err2 := strconv.ParseUint(f[1], 10, 32)
	ret, err3 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return e, false
	}
	e.PID, e.PPID, e.Ret = uint32(pid), uint32(ppid), ret
	e.Args = strings.TrimSuffix(strings.TrimPrefix(rest, " "), " ")
	return e, true
}

// execsnoopArgs splits the arguments execsnoop -q printed: each in double
// quotes, with \", \t and \n for a quote, tab and newline (a backslash
// itself is printed as it is, so an argument holding a backslash before
// one of those letters cannot be told apart). more is true when execsnoop
// said there were more arguments than it read (" ..." at the end; it also
// says so, wrongly, for exactly --max-args arguments).
func execsnoopArgs(s string) (args []string, more bool, ok bool) {
	for {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			return args, more, true
		}
		// With -q, " ..." follows a quote execsnoop opened for an argument
		// it did not read.
		if s == "..." || s == `" ...` {
			return args, true, true
		}
		if s[0] != '"' {
			return nil, false, false
		}
		var b strings.Builder
		i := 1
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				switch s[i+1] {
				case '"':
					b.WriteByte('"')
					i++
					continue
				case 't':
					b.WriteByte('\t')
					i++
					continue
				case 'n':
					b.WriteByte('\n')
					i++
					continue
				}
			}
			b.WriteByte(s[i])
		}
		if i == len(s) {
			return nil, false, false
		}
		args = append(args, b.String())
		s = s[i+1:]
	}
}

// exitsnoopLine is a line of exitsnoop's output: a process that ended,
// with the low 8 bits of its exit code ("code N"; "0"), or the signal that
// killed it ("signal N (name)", ", core dumped").
type exitsnoopLine struct {
	PID, PPID, TID uint32
	Code           int
	Signal         int
	Core           bool
}

func parseExitsnoop(line string) (e exitsnoopLine, ok bool) {
	if len(line) <= libbpfCommWidth || strings.HasPrefix(line, "PCOMM ") {
		return e, false
	}
	f := strings.Fields(line[libbpfCommWidth:])
	if len(f) < 5 {
		return e, false
	}
	pid, err1 := strconv.ParseUint(f[0], 10, 32)
	ppid, err2 := strconv.ParseUint(f[1], 10, 32)
	tid, err3 := strconv.ParseUint(f[2], 10, 32)
	if err1 != nil || err2 != nil || err3 != nil {
		return e, false
	}
	e.PID, e.PPID, e.TID = uint32(pid), uint32(ppid), uint32(tid)
	var err error
	switch {
	case f[4] == "code" && len(f) > 5:
		e.Code, err = strconv.Atoi(f[5])
	case f[4] == "signal" && len(f) > 5:
		e.Signal, err = strconv.Atoi(f[5])
		e.Core = strings.HasSuffix(line, ", core dumped")
	default:
		e.Code, err = strconv.Atoi(f[4])
	}
	return e, err == nil
}

// sigsnoopLine is a line of sigsnoop's output (it traces signal_generate by
// default: every signal generated, by a process or by the kernel, in the
// context of the task that generated it). TPID is the signalled task; Ret
// the tracepoint's errno field.
type sigsnoopLine struct {
	PID    uint32
	Signal int
	TPID   int32
	Ret    int
}

func parseSigsnoop(line string) (e sigsnoopLine, ok bool) {
	f := strings.Fields(line)
	if len(f) < 6 || f[0] == "TIME" {
		return e, false
	}
	// The comm, which may hold spaces, sits between the pid and the last
	// three columns.
	pid, err1 := strconv.ParseUint(f[1], 10, 32)
	sig, err2 := strconv.Atoi(f[len(f)-3])
	tpid, err3 := strconv.ParseInt(f[len(f)-2], 10, 32)
	ret, err4 := strconv.Atoi(f[len(f)-1])
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return e, false
	}
	return sigsnoopLine{PID: uint32(pid), Signal: sig, TPID: int32(tpid), Ret: ret}, true
}

// parseLibbpfLine reads one line of tool's output (execsnoop, exitsnoop or
// sigsnoop, each with its default columns) as a process event. An exit
// stands for the fork that made the process (exitsnoop sees no fork): its
// parent is the forker, the exiting process the child. ok is false for
// headers, SIGCHLD and failed execs (execsnoop prints those only with -x).
func parseLibbpfLine(tool, line string) (e procEvent, ok bool) {
	switch tool {
	case "execsnoop":
		x, ok := parseExecsnoop(line, false)
		if !ok || x.Ret != 0 {
			return e, false
		}
		return procEvent{Type: vocab.TypeExec, PID: x.PID, PPID: x.PPID}, true
	case "exitsnoop":
		x, ok := parseExitsnoop(line)
		if !ok {
			return e, false
		}
		return procEvent{Type: vocab.TypeFork, PID: x.PPID, Child: x.PID}, true
	case "sigsnoop":
		x, ok := parseSigsnoop(line)
		if !ok || x.Signal == sigchld {
			return e, false
		}
		return procEvent{Type: vocab.TypeSignal, PID: x.PID}, true
	}
	return e, false
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
