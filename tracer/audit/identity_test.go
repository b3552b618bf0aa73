// SPDX-License-Identifier: Apache-2.0

package audit

import (
	"fmt"
	"testing"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auparse"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// identityReassembler reassembles with a /proc that holds procs.
func identityReassembler(procs map[uint32]tracer.ProcIdentity, comms map[uint32]string) *reassembler {
	all := vocab.TypeSet(0).With(vocab.TypeExec).With(vocab.TypeFork).With(vocab.TypeSignal).With(vocab.TypeExit)
	r := newReassembler(all, vocab.UnsetID)
	r.procComm = func(pid uint32) (string, bool) { c, ok := comms[pid]; return c, ok }
	r.procExe = func(uint32) (string, bool) { return "", false }
	r.ids.readProc = func(pid uint32, _ procParts) (tracer.ProcIdentity, bool) { p, ok := procs[pid]; return p, ok }
	return r
}

type recorder struct{ events []tracer.Event }

func (rc *recorder) emit(e *tracer.Event) { rc.events = append(rc.events, *e) }

// syscallEvent feeds one syscall's records, as the kernel writes them.
func syscallEvent(r *reassembler, rc *recorder, serial int, nr int, exit int64, a [4]uint64, ppid, pid uint32, comm string, extra ...string) {
	head := fmt.Sprintf("audit(1796011828.799:%d): ", serial)
	r.feed(auparse.TypeSyscall, []byte(head+fmt.Sprintf("arch=c000003e syscall=%d success=yes exit=%d a0=%x a1=%x a2=%x a3=%x items=0 ppid=%d pid=%d auid=4294967295 uid=0 gid=0 euid=0 suid=0 fsuid=0 egid=0 sgid=0 fsgid=0 tty=(none) ses=4294967295 comm=%q exe=\"/x\" key=\"tracer\"",
		nr, exit, a[0], a[1], a[2], a[3], ppid, pid, comm)), rc.emit)
	for _, x := range extra {
		r.feed(auparse.TypeObjPID, []byte(head+x), rc.emit)
	}
	r.feed(auparse.TypeEOE, []byte(head), rc.emit)
}

func TestAuditIdentity(t *testing.T) {
	const sh, victim, initPID = 4300, 4301, 1
	shID := tracer.ExecID{PID: sh, Start: 500}
	vID := tracer.ExecID{PID: victim, Start: 510}
	procs := map[uint32]tracer.ProcIdentity{
		initPID: {ExecID: tracer.ExecID{PID: 1, Start: 2}, Cgroup: "/init.scope"},
		sh:      {ExecID: shID, PPID: initPID, Cgroup: "/system.slice/nginx.service"},
		victim:  {ExecID: vID, PPID: sh, Cgroup: "/system.slice/nginx.service"},
	}
	r := identityReassembler(procs, map[uint32]string{victim: "nginx"})
	var rc recorder

	// sh kills the victim with SIGSEGV (kill(2): the target's comm from OBJ_PID).
	syscallEvent(r, &rc, 10, 62, 0, [4]uint64{victim, 11}, initPID, sh, "sh",
		fmt.Sprintf("opid=%d oauid=-1 ouid=0 oses=-1 ocomm=\"nginx\"", victim))
	// The victim dies of it, dumping core: ANOM_ABEND, a record of its own.
	r.feed(typeAnomAbend, []byte(fmt.Sprintf(`audit(1796011828.801:11): auid=4294967295 uid=0 gid=0 ses=4294967295 subj=unconfined pid=%d comm="nginx" exe="/usr/sbin/nginx" sig=11 res=1`, victim)), rc.emit)
	// tgkill without OBJ_PID (lean records): the comm from /proc.
	syscallEvent(r, &rc, 12, 234, 0, [4]uint64{victim, victim, 10}, initPID, sh, "sh")
	// pidfd_send_signal with a siginfo: SI_QUEUE, as sigqueue(3) passes.
	syscallEvent(r, &rc, 13, 424, 0, [4]uint64{3, 10, 0x7ffd0000}, initPID, sh, "sh",
		fmt.Sprintf("opid=%d oauid=-1 ouid=0 oses=-1 ocomm=\"nginx\"", victim))
	// sh exits 3.
	syscallEvent(r, &rc, 14, 231, 0, [4]uint64{3}, initPID, sh, "sh")

	if len(rc.events) != 5 {
		t.Fatalf("%d events: %+v", len(rc.events), rc.events)
	}
	kill, abend, tgkill, pidfd, exit := rc.events[0], rc.events[1], rc.events[2], rc.events[3], rc.events[4]
	cg := tracer.NewCgroupInfo("/system.slice/nginx.service")
	for _, e := range rc.events {
		if e.Cgroup != cg.Path || e.Unit != "nginx.service" {
			t.Errorf("%s event: cgroup %q unit %q", e.Type, e.Cgroup, e.Unit)
		}
	}
	if kill.ExecID != shID || kill.ParentExecID != procs[initPID].ExecID || kill.Code != vocab.SIUser || !kill.HasCode ||
		kill.Origin != vocab.OriginUser || kill.TargetComm != "nginx" || kill.TargetExecID != vID || kill.Result != vocab.ResultUnknown {
		t.Errorf("kill: %+v", kill)
	}
	want := tracer.KilledBy{Origin: vocab.OriginUser, PID: sh, Comm: "sh", ExecID: shID, Code: vocab.SIUser, Syscall: "kill"}
	if abend.Type != vocab.TypeExit || abend.PID != victim || abend.Comm != "nginx" || abend.Signal != 11 || !abend.CoreUnknown ||
		abend.ExecID != vID || abend.ParentExecID != shID || abend.KilledBy != want {
		t.Errorf("ANOM_ABEND: %+v", abend)
	}
	if tgkill.Code != vocab.SITkill || tgkill.TargetComm != "nginx" || tgkill.TargetExecID != vID {
		t.Errorf("tgkill: %+v", tgkill)
	}
	if pidfd.Code != vocab.SIQueue || pidfd.TargetPID != victim {
		t.Errorf("pidfd_send_signal: %+v", pidfd)
	}
	if exit.ExitCode != 3 || exit.Killed() || exit.ExecID != shID {
		t.Errorf("exit: %+v", exit)
	}
	// The exit ended sh: a process later made with its pid is read anew.
	procs[sh] = tracer.ProcIdentity{ExecID: tracer.ExecID{PID: sh, Start: 900}, PPID: initPID}
	syscallEvent(r, &rc, 15, 62, 0, [4]uint64{victim, 10}, initPID, sh, "sh")
	if got := rc.events[5].ExecID; got.Start != 900 {
		t.Errorf("after pid reuse: exec_id %s", got)
	}
	// A fork makes its child anew too.
	procs[victim] = tracer.ProcIdentity{ExecID: tracer.ExecID{PID: victim, Start: 950}, PPID: sh}
	syscallEvent(r, &rc, 16, 57, victim, [4]uint64{}, initPID, sh, "sh")
	syscallEvent(r, &rc, 17, 231, 0, [4]uint64{0}, sh, victim, "sh")
	if got := rc.events[7].ExecID; got.Start != 950 || rc.events[7].ParentExecID.Start != 900 {
		t.Errorf("child after fork: exec_id %s parent %s", got, rc.events[7].ParentExecID)
	}
}

// A process gone before its event is read has no exec_id: left out.
func TestAuditIdentityGone(t *testing.T) {
	r := identityReassembler(nil, nil)
	var rc recorder
	syscallEvent(r, &rc, 10, 231, 0, [4]uint64{0}, 1, 4400, "true")
	r.feed(typeAnomAbend, []byte(`audit(1796011828.801:11): auid=4294967295 uid=0 gid=0 ses=4294967295 pid=4401 comm="segv" exe="/tmp/segv" sig=11 res=1`), rc.emit)
	if len(rc.events) != 2 {
		t.Fatalf("%d events", len(rc.events))
	}
	for _, e := range rc.events {
		if !e.ExecID.IsZero() || !e.ParentExecID.IsZero() || e.Cgroup != "" || e.KilledBy.Seen() {
			t.Errorf("%s: %+v", e.Type, e)
		}
	}
	if rc.events[1].Signal != 11 || !rc.events[1].CoreUnknown {
		t.Errorf("ANOM_ABEND: %+v", rc.events[1])
	}
}

// A spawn costs two /proc reads: the fork reads the child's stat (its
// start time) and gives it its parent's cgroup, the exec reads only its
// cgroup, which a service manager may have changed in between. After
// clone3 (CLONE_INTO_CGROUP can start a child elsewhere) the fork reads
// the cgroup too.
func TestProcReadsPerSpawn(t *testing.T) {
	const sh, child, child3 = 4300, 4302, 4303
	procs := map[uint32]tracer.ProcIdentity{
		sh:     {ExecID: tracer.ExecID{PID: sh, Start: 500}, PPID: 1, Comm: "sh", Cgroup: "/system.slice/a.service"},
		child:  {ExecID: tracer.ExecID{PID: child, Start: 600}, PPID: sh, Comm: "sh", Cgroup: "/system.slice/b.service"},
		child3: {ExecID: tracer.ExecID{PID: child3, Start: 610}, PPID: sh, Comm: "sh", Cgroup: "/system.slice/c.service"},
	}
	r := identityReassembler(procs, nil)
	var reads []string
	r.ids.readProc = func(pid uint32, parts procParts) (tracer.ProcIdentity, bool) {
		if pid == child || pid == child3 {
			reads = append(reads, fmt.Sprintf("%d %d", pid, parts))
		}
		p, ok := procs[pid]
		return p, ok
	}
	var rc recorder
	syscallEvent(r, &rc, 20, 56, child, [4]uint64{}, 1, sh, "sh")     // clone
	syscallEvent(r, &rc, 21, 59, 0, [4]uint64{}, sh, child, "nginx")  // execve
	syscallEvent(r, &rc, 22, 435, child3, [4]uint64{}, 1, sh, "sh")   // clone3
	syscallEvent(r, &rc, 23, 231, 0, [4]uint64{}, sh, child, "nginx") // exit_group
	want := []string{
		fmt.Sprintf("%d %d", child, partStat),
		fmt.Sprintf("%d %d", child, partCgroup),
		fmt.Sprintf("%d %d", child3, partAll),
	}
	if fmt.Sprint(reads) != fmt.Sprint(want) {
		t.Errorf("/proc reads of the children %v, want %v", reads, want)
	}
	if len(rc.events) != 4 {
		t.Fatalf("%d events: %+v", len(rc.events), rc.events)
	}
	fork, exec, exit := rc.events[0], rc.events[1], rc.events[3]
	if fork.Cgroup != "/system.slice/a.service" || fork.ChildPID != child {
		t.Errorf("fork: %+v", fork)
	}
	// The exec: the start time read at the fork, the cgroup read at the exec.
	if exec.ExecID != procs[child].ExecID || exec.Cgroup != "/system.slice/b.service" || exec.ParentExecID != procs[sh].ExecID {
		t.Errorf("exec: exec_id %v cgroup %q parent %v", exec.ExecID, exec.Cgroup, exec.ParentExecID)
	}
	if exit.ExecID != procs[child].ExecID || exit.Cgroup != "/system.slice/b.service" {
		t.Errorf("exit: exec_id %v cgroup %q", exit.ExecID, exit.Cgroup)
	}
}

// Lean records without EOE: a pidfd_send_signal waits for its OBJ_PID,
// which names the target as the kernel sent to it, rather than end at its
// SYSCALL record and read the sender's descriptor, which by then may name
// another process.
func TestPidfdSignalWaitsForObjPID(t *testing.T) {
	const sh, victim = 4300, 4301
	r := identityReassembler(nil, nil)
	var rc recorder
	r.setExcluded(recEOE, rc.emit)
	head := "audit(1796011828.799:20): "
	r.feed(auparse.TypeSyscall, []byte(head+fmt.Sprintf("arch=c000003e syscall=424 success=yes exit=0 a0=3 a1=9 a2=0 a3=0 items=0 ppid=1 pid=%d auid=4294967295 uid=0 gid=0 euid=0 suid=0 fsuid=0 egid=0 sgid=0 fsgid=0 tty=(none) ses=4294967295 comm=\"sh\" exe=\"/x\" key=\"tracer\"", sh)), rc.emit)
	if len(rc.events) != 0 {
		t.Fatalf("ended at SYSCALL, before its OBJ_PID: %+v", rc.events[0])
	}
	r.feed(auparse.TypeObjPID, []byte(head+fmt.Sprintf("opid=%d oauid=-1 ouid=0 oses=-1 ocomm=\"nginx\"", victim)), rc.emit)
	if len(rc.events) != 1 || rc.events[0].TargetPID != victim || rc.events[0].TargetComm != "nginx" {
		t.Fatalf("events: %+v", rc.events)
	}
	// A failed one (ESRCH: no OBJ_PID comes) ends at SYSCALL; so does
	// every pidfd_send_signal where the kernel excludes OBJ_PID.
	r.feed(auparse.TypeSyscall, []byte("audit(1796011828.799:21): arch=c000003e syscall=424 success=no exit=-3 a0=3 a1=9 a2=0 a3=0 items=0 ppid=1 pid=4300 auid=4294967295 uid=0 gid=0 euid=0 suid=0 fsuid=0 egid=0 sgid=0 fsgid=0 tty=(none) ses=4294967295 comm=\"sh\" exe=\"/x\" key=\"tracer\""), rc.emit)
	r.setExcluded(recEOE|recObjPID, rc.emit)
	r.feed(auparse.TypeSyscall, []byte("audit(1796011828.799:22): arch=c000003e syscall=424 success=yes exit=0 a0=3 a1=9 a2=0 a3=0 items=0 ppid=1 pid=4300 auid=4294967295 uid=0 gid=0 euid=0 suid=0 fsuid=0 egid=0 sgid=0 fsgid=0 tty=(none) ses=4294967295 comm=\"sh\" exe=\"/x\" key=\"tracer\""), rc.emit)
	if len(rc.events) != 3 {
		t.Fatalf("%d events, want 3", len(rc.events))
	}
}
