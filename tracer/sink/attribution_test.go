// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

var attributionTime = time.Date(2026, 3, 1, 10, 41, 7, 113000000, time.UTC)

// hexID is a container id, as a runtime names its cgroup.
const hexID = "4c2a0e7d9b1f3a5c6e8d0b2f4a6c8e0d1b3f5a7c9e1d3b5f7a9c1e3d5b7f9a1c"

func attributionEvents() map[string]tracer.Event {
	parent := tracer.ExecID{PID: 1, Start: 2}
	return map[string]tracer.Event{
		"oom": {Time: attributionTime, Backend: "ebpf", Type: vocab.TypeExit, PID: 4300, Comm: "hog", AUID: vocab.UnsetID,
			Signal: 9, OOMKill: true, ExecID: tracer.ExecID{PID: 4300, Start: 777}, ParentExecID: parent,
			Cgroup: "/tracer-test.slice/hog.scope", Unit: "hog.scope",
			KilledBy: tracer.KilledBy{Origin: vocab.OriginKernel, PID: 4300, Comm: "hog", ExecID: tracer.ExecID{PID: 4300, Start: 777}, Code: vocab.SIKernel}},
		"segv": {Time: attributionTime, Backend: "ebpf", Type: vocab.TypeExit, PID: 4301, Comm: "segv", AUID: vocab.UnsetID,
			Signal: 11, CoreDumped: true,
			KilledBy: tracer.KilledBy{Origin: vocab.OriginKernel, PID: 4301, Comm: "segv", Code: 1}},
		"term": {Time: attributionTime, Backend: "ebpf", Type: vocab.TypeExit, PID: 4302, Comm: "nginx", AUID: vocab.UnsetID,
			Signal: 15, KilledBy: tracer.KilledBy{Origin: vocab.OriginUser, PID: 1, Comm: "systemd", ExecID: parent, Code: vocab.SIUser, Syscall: "kill"}},
		"abend": {Time: attributionTime, Backend: "audit", Type: vocab.TypeExit, PID: 4303, Comm: "segv", AUID: vocab.UnsetID, Signal: 11, CoreUnknown: true},
		"exit3": {Time: attributionTime, Backend: "audit", Type: vocab.TypeExit, PID: 4304, Comm: "sh", AUID: vocab.UnsetID, ExitCode: 3,
			Cgroup: "/system.slice/docker-" + hexID + ".scope", ContainerID: hexID, Unit: "docker-" + hexID + ".scope"},
		"pipe": {Time: attributionTime, Backend: "ebpf", Type: vocab.TypeSignal, PID: 4305, Comm: "yes", AUID: vocab.UnsetID,
			TargetPID: 4305, Signal: 13, HasCode: true, Code: vocab.SIUser, Origin: vocab.OriginKernel, Result: vocab.ResultDelivered,
			TargetComm: "yes", TargetExecID: tracer.ExecID{PID: 4305, Start: 9}},
		"kill": {Time: attributionTime, Backend: "audit", Type: vocab.TypeSignal, PID: 4306, Comm: "bash", AUID: 1000,
			TargetPID: 4300, Signal: 10, Syscall: "kill", HasCode: true, Code: vocab.SIUser, Origin: vocab.OriginUser, TargetComm: "sleep"},
	}
}

func TestAttributionJSON(t *testing.T) {
	want := map[string]string{
		"oom": `{"time":"2026-03-01T10:41:07.113Z","backend":"ebpf","type":"exit","pid":4300,"comm":"hog","uid":0,"auid":4294967295,` +
			`"exec_id":"B:777:4300","parent_exec_id":"B:2:1","cgroup":"/tracer-test.slice/hog.scope","unit":"hog.scope",` +
			`"signal":9,"signal_name":"SIGKILL","core_dumped":false,` +
			`"killed_by":{"pid":4300,"comm":"hog","exec_id":"B:777:4300","code":"SI_KERNEL","origin":"kernel"},"oom_kill":true}`,
		"segv": `{"time":"2026-03-01T10:41:07.113Z","backend":"ebpf","type":"exit","pid":4301,"comm":"segv","uid":0,"auid":4294967295,` +
			`"signal":11,"signal_name":"SIGSEGV","core_dumped":true,"killed_by":{"pid":4301,"comm":"segv","code":"SEGV_MAPERR","origin":"kernel"}}`,
		"term": `{"time":"2026-03-01T10:41:07.113Z","backend":"ebpf","type":"exit","pid":4302,"comm":"nginx","uid":0,"auid":4294967295,` +
			`"signal":15,"signal_name":"SIGTERM","core_dumped":false,"killed_by":{"pid":1,"comm":"systemd","exec_id":"B:2:1","code":"SI_USER","origin":"user","syscall":"kill"}}`,
		"abend": `{"time":"2026-03-01T10:41:07.113Z","backend":"audit","type":"exit","pid":4303,"comm":"segv","uid":0,"auid":4294967295,` +
			`"signal":11,"signal_name":"SIGSEGV"}`,
		"exit3": `{"time":"2026-03-01T10:41:07.113Z","backend":"audit","type":"exit","pid":4304,"comm":"sh","uid":0,"auid":4294967295,` +
			`"cgroup":"/system.slice/docker-` + hexID + `.scope","container_id":"` + hexID + `","unit":"docker-` + hexID + `.scope","exit_code":3}`,
		"pipe": `{"time":"2026-03-01T10:41:07.113Z","backend":"ebpf","type":"signal","pid":4305,"comm":"yes","uid":0,"auid":4294967295,` +
			`"target_pid":4305,"signal":13,"signal_name":"SIGPIPE","code":"SI_USER","origin":"kernel","result":"delivered","target_comm":"yes","target_exec_id":"B:9:4305"}`,
		"kill": `{"time":"2026-03-01T10:41:07.113Z","backend":"audit","type":"signal","pid":4306,"comm":"bash","uid":0,"auid":1000,` +
			`"target_pid":4300,"signal":10,"signal_name":"SIGUSR1","syscall":"kill","ret":0,"code":"SI_USER","origin":"user","target_comm":"sleep"}`,
	}
	for name, e := range attributionEvents() {
		got := string(AppendJSON(nil, &e))
		w := strings.ReplaceAll(want[name], `"B:`, `"`+host.BootID()+":")
		if got != w {
			t.Errorf("%s:\n got %s\nwant %s", name, got, w)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(got), &m); err != nil {
			t.Errorf("%s: invalid JSON: %v", name, err)
		}
	}
}

func TestAttributionText(t *testing.T) {
	want := map[string]string{
		"oom":   "killed by SIGKILL from oom-killer",
		"segv":  "killed by SIGSEGV (SEGV_MAPERR) from the kernel, core dumped",
		"term":  "killed by SIGTERM from systemd (pid 1) via kill",
		"abend": "killed by SIGSEGV",
		"exit3": "code=3",
		"pipe":  "kernel -> 4305 SIGPIPE (SI_USER, delivered, to yes)",
		"kill":  "kill -> 4300 SIGUSR1 ret=0 (SI_USER, to sleep)",
	}
	for name, e := range attributionEvents() {
		got := string(AppendText(nil, &e))
		if !strings.HasSuffix(got, " "+want[name]) {
			t.Errorf("%s: %q does not end in %q", name, got, want[name])
		}
	}
	// A comm with a control character cannot reach the terminal raw.
	e := attributionEvents()["term"]
	e.KilledBy.Comm = "evil\x1b[2J"
	if got := string(AppendText(nil, &e)); strings.ContainsRune(got, 0x1b) {
		t.Errorf("control character printed: %q", got)
	}
}

// The JSON encoder stays allocation-free with every new field set.
func TestAttributionJSONAllocs(t *testing.T) {
	events := attributionEvents()
	buf := make([]byte, 0, 4096)
	for name, e := range events {
		e := e
		n := testing.AllocsPerRun(100, func() { buf = AppendJSON(buf[:0], &e) })
		if n != 0 {
			t.Errorf("%s: %v allocations per event", name, n)
		}
	}
}

// An event's ancestors print as an array of pid, comm and exec id, without
// allocating (tracer's TestAncestry fills them).
func TestAncestorsJSON(t *testing.T) {
	bash, sleep := tracer.ExecID{PID: 900, Start: 60}, tracer.ExecID{PID: 901, Start: 70}
	e := tracer.Event{Type: vocab.TypeExec, PID: 901, Comm: "bash", ExecID: sleep, ParentExecID: bash,
		Ancestors: []tracer.Ancestor{{PID: 900, Comm: "bash", ExecID: bash}}}
	js := string(AppendJSON(nil, &e))
	if !strings.Contains(js, `"ancestors":[{"pid":900,"comm":"bash","exec_id":"`+bash.String()+`"}]`) {
		t.Errorf("JSON %s", js)
	}
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = AppendJSON(buf[:0], &e) }); n != 0 {
		t.Errorf("%v allocations per event", n)
	}
}

// The encoders print an exec id as tracer.ExecID.String does.
func TestAppendExecIDIsString(t *testing.T) {
	for _, id := range []tracer.ExecID{{}, {PID: 1, Start: 2}, {PID: 4194304, Start: 1 << 40}, {PID: 99, Start: 100}} {
		if got := string(appendExecID([]byte("x"), id)); got != "x"+id.String() {
			t.Errorf("appendExecID(%+v) = %s, want x%s", id, got, id.String())
		}
	}
}
