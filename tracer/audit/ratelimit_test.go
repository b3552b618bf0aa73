// SPDX-License-Identifier: Apache-2.0

package audit

import (
	"fmt"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auparse"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// --rate-limit on audit: a cgroup's kill loop is cut at the limit per
// second at its SYSCALL records, and a throttle event per window says how
// many kills it left out; another cgroup's events all pass, and a process
// of the root cgroup is a source of its own.
func TestAuditRateLimit(t *testing.T) {
	const flood, calm, rooted = 500, 600, 700
	procs := map[uint32]tracer.ProcIdentity{
		flood:  {ExecID: tracer.ExecID{PID: flood, Start: 50}, PPID: 1, Cgroup: "/pod/flood"},
		calm:   {ExecID: tracer.ExecID{PID: calm, Start: 60}, PPID: 1, Cgroup: "/pod/calm"},
		rooted: {ExecID: tracer.ExecID{PID: rooted, Start: 70}, PPID: 1, Cgroup: "/"},
	}
	r := identityReassembler(procs, nil)
	r.limit = tracer.NewLimiter(3, backendName)
	var rc recorder
	serial := 100
	kill := func(sec int64, ms int, pid uint32, comm string) {
		serial++
		head := fmt.Sprintf("audit(%d.%03d:%d): ", sec, ms, serial)
		r.feed(auparse.TypeSyscall, []byte(head+fmt.Sprintf("arch=c000003e syscall=62 success=yes exit=0 a0=%x a1=a a2=0 a3=0 items=0 ppid=1 pid=%d auid=4294967295 uid=0 gid=0 euid=0 suid=0 fsuid=0 egid=0 sgid=0 fsgid=0 tty=(none) ses=4294967295 comm=%q exe=\"/x\" key=\"tracer\"",
			pid, pid, comm)), rc.emit)
		r.feed(auparse.TypeEOE, []byte(head), rc.emit)
	}
	const s0 = 1796011828
	for i := range 10 {
		kill(s0, i, flood, "storm")
	}
	kill(s0, 500, calm, "calm")
	kill(s0, 600, calm, "calm")
	for i := range 5 {
		kill(s0+1, i, flood, "storm")
	}
	for range 4 {
		kill(s0+1, 100, rooted, "rooted")
	}
	r.sweepLimit(time.Unix(s0+1, 900e6), rc.emit) // window s0+1 is not over: nothing
	r.flushLimit(time.Unix(s0+1, 950e6), rc.emit)

	var got []string
	for _, e := range rc.events {
		switch e.Type {
		case vocab.TypeSignal:
			got = append(got, fmt.Sprintf("%s@%d", e.Comm, e.Time.Unix()-s0))
		case vocab.TypeThrottle:
			th := e.Throttle
			got = append(got, fmt.Sprintf("throttle %s %s %s pid=%d exec_id=%v %d..%d+%dms signal=%d", th.Source, e.Cgroup, e.Comm, e.PID, e.ExecID,
				th.Start.Unix()-s0, th.End.Unix()-s0, th.End.Sub(th.End.Truncate(time.Second)).Milliseconds(), th.Signal))
		}
	}
	want := []string{
		"storm@0", "storm@0", "storm@0", "calm@0", "calm@0",
		"throttle cgroup /pod/flood storm pid=500 exec_id=" + procs[flood].ExecID.String() + " 0..1+0ms signal=7",
		"storm@1", "storm@1", "storm@1",
		"rooted@1", "rooted@1", "rooted@1",
		// The end: windows not over end now.
		"throttle cgroup /pod/flood storm pid=500 exec_id=" + procs[flood].ExecID.String() + " 1..1+950ms signal=2",
		"throttle process / rooted pid=700 exec_id=" + procs[rooted].ExecID.String() + " 1..1+950ms signal=1",
	}
	last := len(got) - 2
	if len(got) == len(want) && got[last] > got[last+1] { // the map's order
		got[last], got[last+1] = got[last+1], got[last]
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events\n%q\nwant\n%q", got, want)
	}
	th := r.limit.Throttled()
	if th[vocab.TypeSignal] != 10 {
		t.Errorf("throttled %v, want 10 signals", th)
	}
}
