// SPDX-License-Identifier: Apache-2.0

package trace

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

func sampleReport() *Report {
	c := tracer.NewCounts()
	add := func(e tracer.Event, n int) {
		for i := 0; i < n; i++ {
			c.Add(&e)
		}
	}
	add(tracer.Event{Type: vocab.TypeExec, Comm: "sh", Filename: "/bin/grep"}, 588)
	add(tracer.Event{Type: vocab.TypeExec, Comm: "sh", Filename: "/bin/sed"}, 102)
	add(tracer.Event{Type: vocab.TypeFork, Comm: "sh"}, 1760)
	add(tracer.Event{Type: vocab.TypeSignal, Comm: "sh", TargetPID: 4242, Signal: 10}, 5)
	return &Report{Backend: "ebpf", Counts: c, Rusage: Rusage{3120 * time.Millisecond, 2990 * time.Millisecond, 1050 * time.Millisecond}}
}

func TestTraceTable(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	want := `@exec_calls[sh, /bin/sed]: 102
@exec_calls[sh, /bin/grep]: 588
@fork_calls[sh]: 1760
@signals[sh -> 4242, SIGUSR1]: 5
total: exec 690  fork 1760  signal 5  lost 0
elapsed 3.12s  user 2.99s  sys 1.05s  cpu 129%
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant\n%s", b.String(), want)
	}
}

func TestTraceJSON(t *testing.T) {
	data, err := json.Marshal(sampleReport())
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Backend   string `json:"backend"`
		ExecCalls []struct {
			Comm, Filename string
			Count          int
		} `json:"exec_calls"`
		ForkCalls []struct {
			Comm  string
			Count int
		} `json:"fork_calls"`
		Signals []struct {
			Comm      string
			TargetPID int `json:"target_pid"`
			Signal    int
			Count     int
		} `json:"signals"`
		Totals map[string]int     `json:"totals"`
		Rusage map[string]float64 `json:"rusage"`
		Exit   *int               `json:"exit_code"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got.Backend != "ebpf" || len(got.ExecCalls) != 2 || got.ExecCalls[1].Count != 588 || got.ForkCalls[0].Count != 1760 ||
		got.Signals[0].TargetPID != 4242 || got.Signals[0].Signal != 10 || got.Totals["exec"] != 690 || got.Totals["lost"] != 0 ||
		got.Rusage["elapsed_s"] != 3.12 || got.Rusage["cpu_pct"] < 129 || got.Exit == nil {
		t.Errorf("trace JSON: %s", data)
	}
}

// Comm and file names a traced command chose are escaped in the table.
func TestTraceTableHostile(t *testing.T) {
	c := tracer.NewCounts()
	when := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.Local)
	comm := "x\nFAKE\x1b[31m\xff"
	file := "/tmp/a\nb\x1b]0;t\x07\xfe\xc2\x9b"
	for _, e := range []*tracer.Event{
		{Time: when, Backend: "ebpf", Type: vocab.TypeExec, PID: 42, Comm: comm, PPID: 1, Filename: file,
			Argv: []string{file, "\r\t", "ok \"q\"", "\xc2\x85\u2028"}},
		{Time: when, Backend: "audit", Type: vocab.TypeFork, PID: 42, Comm: comm, Syscall: "clone\n", ChildPID: 43},
		{Time: when, Backend: "b\x1bx", Type: vocab.TypeSignal, PID: 42, Comm: comm, Syscall: "kill", TargetPID: -1, Signal: 10},
	} { // the first hostile events of tracer/sink's escape tests: exec, fork, signal
		c.Add(e)
	}
	var b bytes.Buffer
	if err := (&Report{Backend: "ebpf", Counts: c}).WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	want := `@exec_calls[x\nFAKE\x1b[31m\xff, /tmp/a\nb\x1b]0;t\a\xfe\u009b]: 1
@fork_calls[x\nFAKE\x1b[31m\xff]: 1
@signals[x\nFAKE\x1b[31m\xff -> -1, SIGUSR1]: 1
total: exec 1  fork 1  signal 1  lost 0
elapsed 0.00s  user 0.00s  sys 0.00s  cpu 0%
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant\n%s", b.String(), want)
	}
}
