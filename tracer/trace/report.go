// SPDX-License-Identifier: Apache-2.0

package trace

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Rusage is the resource use of a command's process tree, as /usr/bin/time
// reports it.
type Rusage struct {
	Elapsed time.Duration
	User    time.Duration
	Sys     time.Duration
}

// CPUPct is (user+sys)/elapsed in percent, like /usr/bin/time's %P.
func (r Rusage) CPUPct() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return 100 * float64(r.User+r.Sys) / float64(r.Elapsed)
}

// Report is what `tracer trace` prints: counts of one command's tree,
// loss, the tree's resource use and the command's exit status.
type Report struct {
	Backend  string
	Counts   *tracer.Counts
	Lost     uint64
	Rusage   Rusage
	ExitCode int
}

// WriteTable prints the report as bpftrace-style maps. Comm and file names
// are escaped (see Escape): the traced command chose them, and a newline or
// an ESC in one must not forge a line or drive the reader's terminal.
func (r *Report) WriteTable(w io.Writer) error {
	c := r.Counts
	var b []byte
	for _, k := range c.ExecKeys() {
		b = fmt.Appendf(b, "@exec_calls[%s, %s]: %d\n", sink.Escape(k.Comm), sink.Escape(k.Filename), c.Exec[k])
	}
	for _, k := range c.ForkKeys() {
		b = fmt.Appendf(b, "@fork_calls[%s]: %d\n", sink.Escape(k), c.Fork[k])
	}
	for _, k := range c.SignalKeys() {
		b = fmt.Appendf(b, "@signals[%s -> %d, %s]: %d\n", sink.Escape(k.Comm), k.Target, sink.Escape(vocab.SignalName(k.Signal)), c.Signals[k])
	}
	b = fmt.Appendf(b, "total: exec %d  fork %d  signal %d", c.Total(vocab.TypeExec), c.Total(vocab.TypeFork), c.Total(vocab.TypeSignal))
	if n := c.Total(vocab.TypeExit); n > 0 {
		b = fmt.Appendf(b, "  exit %d", n)
	}
	b = fmt.Appendf(b, "  lost %d\n", r.Lost)
	ru := r.Rusage
	b = fmt.Appendf(b, "elapsed %.2fs  user %.2fs  sys %.2fs  cpu %.0f%%\n",
		ru.Elapsed.Seconds(), ru.User.Seconds(), ru.Sys.Seconds(), ru.CPUPct())
	_, err := w.Write(b)
	return err
}

type jsonExec struct {
	Comm     string `json:"comm"`
	Filename string `json:"filename"`
	Count    uint64 `json:"count"`
}

type jsonFork struct {
	Comm  string `json:"comm"`
	Count uint64 `json:"count"`
}

type jsonSignal struct {
	Comm       string `json:"comm"`
	TargetPID  int32  `json:"target_pid"`
	Signal     int    `json:"signal"`
	SignalName string `json:"signal_name"`
	Count      uint64 `json:"count"`
}

type jsonTotals struct {
	Exec   uint64 `json:"exec"`
	Fork   uint64 `json:"fork"`
	Signal uint64 `json:"signal"`
	Exit   uint64 `json:"exit"`
	Lost   uint64 `json:"lost"`
}

type jsonRusage struct {
	ElapsedS float64 `json:"elapsed_s"`
	UserS    float64 `json:"user_s"`
	SysS     float64 `json:"sys_s"`
	CPUPct   float64 `json:"cpu_pct"`
}

type jsonTrace struct {
	Backend   string       `json:"backend"`
	ExecCalls []jsonExec   `json:"exec_calls"`
	ForkCalls []jsonFork   `json:"fork_calls"`
	Signals   []jsonSignal `json:"signals"`
	Totals    jsonTotals   `json:"totals"`
	Rusage    jsonRusage   `json:"rusage"`
	ExitCode  int          `json:"exit_code"`
}

// round3 keeps three decimals, enough for seconds measured by wait4.
func round3(f float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', 3, 64), 64)
	return v
}

// MarshalJSON renders trace's JSON report (docs/trace.md).
func (r *Report) MarshalJSON() ([]byte, error) {
	c := r.Counts
	out := jsonTrace{
		Backend:   r.Backend,
		ExecCalls: []jsonExec{}, ForkCalls: []jsonFork{}, Signals: []jsonSignal{},
		Totals: jsonTotals{c.Total(vocab.TypeExec), c.Total(vocab.TypeFork), c.Total(vocab.TypeSignal), c.Total(vocab.TypeExit), r.Lost},
		Rusage: jsonRusage{round3(r.Rusage.Elapsed.Seconds()), round3(r.Rusage.User.Seconds()),
			round3(r.Rusage.Sys.Seconds()), round3(r.Rusage.CPUPct())},
		ExitCode: r.ExitCode,
	}
	for _, k := range c.ExecKeys() {
		out.ExecCalls = append(out.ExecCalls, jsonExec{k.Comm, k.Filename, c.Exec[k]})
	}
	for _, k := range c.ForkKeys() {
		out.ForkCalls = append(out.ForkCalls, jsonFork{k, c.Fork[k]})
	}
	for _, k := range c.SignalKeys() {
		out.Signals = append(out.Signals, jsonSignal{k.Comm, k.Target, k.Signal, vocab.SignalName(k.Signal), c.Signals[k]})
	}
	return json.Marshal(out)
}
