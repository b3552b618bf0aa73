// SPDX-License-Identifier: Apache-2.0

package audit

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/auparse"
	"github.com/tracer-dev/tracer/tracer/sink"
)

// A user can make a 10 KB filename (a deep directory) and a 10 KB cgroup
// (a deep delegated one): each is cut to about 1 KiB, flagged, and the
// JSON line and ECS document stay under a UDP datagram, whatever the bytes
// (escaped six times their size) and with argv at its cap too.
func TestLongFilenameAndCgroupCapped(t *testing.T) {
	const pid = 4500
	long := strings.Repeat("\x01", 10<<10)
	cg := "/user.slice/user-1000.slice/user@1000.service/" + strings.Repeat("d\x01/", 10<<10/3)
	r := identityReassembler(map[uint32]tracer.ProcIdentity{
		pid: {ExecID: tracer.ExecID{PID: pid, Start: 700}, PPID: 1, Cgroup: cg},
		1:   {ExecID: tracer.ExecID{PID: 1, Start: 2}, Cgroup: "/init.scope"},
	}, nil)
	h := "audit(1796011828.799:30): "
	events := feedLines(t, r, []string{
		fmt.Sprintf("%d %sarch=%x syscall=%d success=yes exit=0 a0=1 a1=2 a2=3 a3=4 items=1 ppid=1 pid=%d auid=0 uid=0 comm=\"sh\"",
			auparse.TypeSyscall, h, archValue(false), execveNr(t), pid),
		// And an argv at its cap, every byte escaped in JSON.
		fmt.Sprintf("%d %sargc=1 a0=%s", auparse.TypeExecve, h, strings.ToUpper(hex.EncodeToString([]byte(strings.Repeat("\x01", 4096))))),
		fmt.Sprintf("%d %sitem=0 name=%s", auparse.TypePath, h, strings.ToUpper(hex.EncodeToString([]byte(long)))),
		fmt.Sprintf("%d %s", auparse.TypeEOE, h),
	})
	if len(events) != 1 {
		t.Fatalf("%d events", len(events))
	}
	e := events[0]
	if len(e.Filename) > tracer.FilenameMax || !e.FilenameTruncated || !strings.HasPrefix(long, e.Filename) {
		t.Errorf("filename: %d bytes, truncated %v", len(e.Filename), e.FilenameTruncated)
	}
	if len(e.Cgroup) > tracer.CgroupMax || !e.CgroupTruncated || !strings.HasPrefix(cg, e.Cgroup) || e.Unit != "user@1000.service" {
		t.Errorf("cgroup: %d bytes, truncated %v, unit %q", len(e.Cgroup), e.CgroupTruncated, e.Unit)
	}
	for _, f := range []struct {
		name string
		b    []byte
	}{{"json", sink.AppendJSON(nil, &e)}, {"ecs", sink.AppendECS(nil, &e)}} {
		// Under a UDP datagram's 65,507 bytes (syslog+udp), with room for
		// the syslog header.
		if len(f.b) > 60<<10 {
			t.Errorf("%s: %d bytes", f.name, len(f.b))
		}
		t.Logf("%s: %d bytes", f.name, len(f.b))
		for _, flag := range []string{`"filename_truncated":true`, `"cgroup_truncated":true`} {
			if !bytes.Contains(f.b, []byte(flag)) {
				t.Errorf("%s has no %s", f.name, flag)
			}
		}
	}
}
