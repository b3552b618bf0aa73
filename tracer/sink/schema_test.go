// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/sink/schematest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// schemaEvents are events of every type and shape docs/events.md gives,
// with every optional field somewhere, and strings a hostile process picks.
func schemaEvents() map[string]*tracer.Event {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	id := func(pid uint32, start uint64) tracer.ExecID { return tracer.ExecID{PID: pid, Start: start} }
	base := func(typ vocab.Type) *tracer.Event {
		return &tracer.Event{
			Time: t0, Backend: "ebpf", Type: typ, PID: 4300, Comm: "sh\x1b[2J", UID: 1000, AUID: 1000,
			ExecID: id(4300, 700), ParentExecID: id(4200, 650), Cgroup: "/system.slice/docker-" + cid + ".scope",
			ContainerID: cid, Unit: "docker-" + cid + ".scope",
		}
	}
	ev := map[string]*tracer.Event{}

	e := base(vocab.TypeExec)
	e.PPID, e.Filename = 4200, "/usr/bin/ls"
	e.Argv = []string{"ls", "a b", `"},"x":1,"`, "\xff\u202e"}
	e.ArgvTruncated = true
	e.Ancestors = []tracer.Ancestor{{PID: 4200, Comm: "bash", ExecID: id(4200, 650)}, {PID: 1, Comm: "systemd", ExecID: id(1, 2)}}
	ev["exec"] = e

	// A setuid-root program run by uid 1000 from a terminal, with every
	// audit field.
	e = base(vocab.TypeExec)
	e.Backend, e.PPID, e.Filename, e.Argv = "audit", 4200, "/usr/bin/passwd", []string{"passwd"}
	e.HasCreds, e.GID = true, 1000
	e.SameCreds()
	e.EUID, e.SUID, e.FSUID, e.SGID = 0, 0, 0, 42
	e.Session, e.TTY, e.Exe, e.Cwd, e.Key = 3, "pts0", "/usr/bin/bash", `/home/a "b"`, "exec\x01tracer"
	ev["setuid exec, audit fields"] = e

	e = base(vocab.TypeSignal)
	e.TargetPID, e.Signal, e.Syscall, e.Origin = 4301, 15, "kill", vocab.OriginUser
	e.HasCreds, e.GID, e.Session, e.Exe = true, 1000, vocab.UnsetID, "/usr/bin/kill"
	e.SameCreds()
	e.EGID, e.FSGID = 5, 5
	ev["signal, setgid sender, no session"] = e

	e = base(vocab.TypeExec)
	e.Backend, e.PPID, e.Filename, e.Argv, e.Ret = "audit", 4200, "/nonexistent/x", []string{"x"}, -2
	e.ExecID, e.ParentExecID, e.Cgroup, e.ContainerID, e.Unit, e.AUID = tracer.ExecID{}, tracer.ExecID{}, "", "", "", vocab.UnsetID
	ev["exec failed, nothing known of the process"] = e

	e = base(vocab.TypeFork)
	e.ChildPID, e.Syscall = 4301, "clone3"
	ev["fork"] = e

	e = base(vocab.TypeExec)
	e.PPID, e.Filename, e.Argv = 4200, "/usr/sbin/nginx", []string{"nginx"}
	e.Cgroup, e.Unit = "/kubepods.slice/kubepods-pod0b9f6a1e.slice/cri-containerd-"+cid+".scope", "cri-containerd-"+cid+".scope"
	e.Pod = tracer.PodInfo{Name: "web-7d4b9", Namespace: "shop", UID: "0b9f6a1e-5c1d-4f7a-9e55-3f2d1c0a7b11",
		Container: "nginx", Image: "docker.io/library/nginx:1.27", ImageID: "sha256:4f5e"}
	ev["exec in a pod"] = e

	e = base(vocab.TypeFork)
	e.ChildPID, e.Syscall = 4301, "clone3"
	e.Pod = tracer.PodInfo{Name: "\"},\"x\":1", Namespace: "shop", Container: "c", Image: "img:\x1b[2J"}
	ev["fork in a pod, no image id"] = e

	e = base(vocab.TypeSignal)
	e.TargetPID, e.Signal, e.Syscall, e.Ret = 4301, 9, "kill", 0
	e.Code, e.HasCode, e.Origin, e.Result = vocab.SIUser, true, vocab.OriginUser, vocab.ResultDelivered
	e.TargetComm, e.TargetExecID = "victim", id(4301, 710)
	ev["signal"] = e

	e = base(vocab.TypeSignal)
	e.Backend, e.TargetPID, e.Signal, e.Syscall, e.Ret = "audit", -4300, 15, "kill", -3
	e.Code, e.HasCode, e.Origin = vocab.SIUser, true, vocab.OriginUser
	ev["signal to a group, failed"] = e

	e = base(vocab.TypeSignal)
	e.TargetPID, e.Signal = 4300, 11
	e.Code, e.HasCode, e.Origin, e.Result = 1, true, vocab.OriginKernel, vocab.ResultDelivered
	e.TargetComm, e.TargetExecID = e.Comm, e.ExecID
	ev["kernel signal"] = e

	e = base(vocab.TypeExit)
	e.ExitCode = 3
	ev["exit"] = e

	e = base(vocab.TypeExit)
	e.ExitCode, e.ParentExecID = -1, tracer.ExecID{}
	ev["exit -1, parent unknown"] = e

	e = base(vocab.TypeExit)
	e.Signal = 9
	e.KilledBy = tracer.KilledBy{Origin: vocab.OriginUser, PID: 4200, Comm: "bash", ExecID: id(4200, 650), Code: vocab.SIUser, Syscall: "kill"}
	ev["killed by a process"] = e

	e = base(vocab.TypeExit)
	e.Signal, e.CoreDumped = 11, true
	e.KilledBy = tracer.KilledBy{Origin: vocab.OriginKernel, Comm: "kernel", Code: 1}
	ev["killed by a fault"] = e

	e = base(vocab.TypeExit)
	e.Signal, e.OOMKill = 9, true
	e.KilledBy = tracer.KilledBy{Origin: vocab.OriginKernel, Comm: "oom-killer", Code: vocab.SIKernel}
	ev["killed by the OOM killer"] = e

	e = base(vocab.TypeExit)
	e.Backend, e.Signal, e.CoreUnknown = "audit", 6, true
	ev["killed, sender not seen (audit)"] = e

	e = base(vocab.TypeThrottle)
	e.ParentExecID = tracer.ExecID{}
	e.Throttle = tracer.Throttle{Source: tracer.SourceCgroup, CgroupID: 4242, Start: t0.Add(-time.Second), End: t0,
		Limit: 1000, Signal: 1998000, Exec: 3}
	ev["throttle"] = e
	return ev
}

const cid = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// Every event the encoders make is valid ECS 9.4.0 and valid OCSF 1.8.0
// Process Activity, checked against the schemas' own definitions.
func TestSchemasValidate(t *testing.T) {
	for name, e := range schemaEvents() {
		for _, f := range []struct {
			name     string
			enc      Encoder
			validate func([]byte) error
		}{
			{"ecs", AppendECS, schematest.ECS},
			{"ocsf", AppendOCSF, schematest.OCSF},
		} {
			doc := f.enc(nil, e)
			if !json.Valid(doc) {
				t.Errorf("%s %s: not JSON: %s", f.name, name, doc)
				continue
			}
			if err := f.validate(doc); err != nil {
				t.Errorf("%s %s: %v\n%s", f.name, name, err, doc)
			}
		}
	}
}

// The schemas' versions are the ones the encoders say they follow.
func TestSchemaVersions(t *testing.T) {
	if ECSVersion != schematest.ECSVersion || OCSFVersion != schematest.OCSFVersion {
		t.Errorf("encoders follow ECS %s and OCSF %s; testdata has ECS %s and OCSF %s",
			ECSVersion, OCSFVersion, schematest.ECSVersion, schematest.OCSFVersion)
	}
}

// BenchmarkSchemaEncode: the cost of a document on the watch's output
// goroutine, per format, for an exec (the longest) and a signal (a
// storm's), beside tracer's own JSON line.
func BenchmarkSchemaEncode(b *testing.B) {
	evs := schemaEvents()
	for _, f := range []struct {
		name string
		enc  Encoder
	}{{"json", AppendJSON}, {"ecs", AppendECS}, {"ocsf", AppendOCSF}} {
		for _, typ := range []string{"exec", "signal"} {
			e := evs[typ]
			b.Run(f.name+"/"+typ, func(b *testing.B) {
				buf := f.enc(nil, e)
				b.ReportAllocs()
				for b.Loop() {
					buf = f.enc(buf[:0], e)
				}
				b.SetBytes(int64(len(buf)))
			})
		}
	}
}
