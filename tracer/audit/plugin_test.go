// SPDX-License-Identifier: Apache-2.0

//go:build linux

package audit

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// pluginStream is auditd's plugin output (format = string) as auditd 3.0.9
// wrote it: a kill(2) under the followed key (ENRICHED, node= first), one
// under another key, an exec with its EXECVE and PATH records, a line cut
// short and one that is no record.
const pluginStream = `type=DAEMON_START msg=audit(1796316896.677:8056): op=start ver=3.0.9 format=raw kernel=6.18.44 auid=4294967295 pid=4409 uid=0 ses=4294967295 res=success
node=web1 type=SYSCALL msg=audit(1796316897.625:100): arch=c000003e syscall=62 success=yes exit=0 a0=1133 a1=a a2=0 a3=7fd2433ddac0 items=0 ppid=4403 pid=4425 auid=4294967295 uid=0 gid=0 euid=0 suid=0 fsuid=0 egid=0 sgid=0 fsgid=0 tty=(none) ses=4294967295 comm="kill" exe="/usr/bin/kill" key="wtexp"` + "\x1d" + `ARCH=x86_64 SYSCALL=kill AUID="unset" UID="root"
node=web1 type=OBJ_PID msg=audit(1796316897.625:100): opid=4403 oauid=-1 ouid=0 oses=-1 ocomm="bash"
node=web1 type=PROCTITLE msg=audit(1796316897.625:100): proctitle=2F62696E2F6B696C6C002D555352310034343033
node=web1 type=EOE msg=audit(1796316897.625:100): 
type=SYSCALL msg=audit(1796316897.700:101): arch=c000003e syscall=62 success=yes exit=0 a0=1133 a1=c a2=0 a3=0 items=0 ppid=4403 pid=4426 auid=4294967295 uid=0 gid=0 euid=0 suid=0 fsuid=0 egid=0 sgid=0 fsgid=0 tty=(none) ses=4294967295 comm="kill" exe="/usr/bin/kill" key="other"
type=OBJ_PID msg=audit(1796316897.700:101): opid=4403 oauid=-1 ouid=0 oses=-1 ocomm="bash"
type=EOE msg=audit(1796316897.700:101): 
type=SYSCALL msg=audit(1796316897.800:102): arch=c000003e syscall=59 success=yes exit=0 a0=55d0 a1=55d1 a2=55d2 a3=0 items=2 ppid=4403 pid=4427 auid=1000 uid=1000 gid=1000 euid=1000 suid=1000 fsuid=1000 egid=1000 sgid=1000 fsgid=1000 tty=pts0 ses=3 comm="true" exe="/usr/bin/true" key="wtexp"
type=EXECVE msg=audit(1796316897.800:102): argc=2 a0="/bin/true" a1=2D2D68656C6C6F20776F726C64
type=CWD msg=audit(1796316897.800:102): cwd="/root"
type=PATH msg=audit(1796316897.800:102): item=0 name="/bin/true" inode=1 dev=fd:00 mode=0100755 ouid=0 ogid=0 rdev=00:00 nametype=NORMAL cap_fp=0 cap_fi=0 cap_fe=0 cap_fver=0 cap_frootid=0
type=PATH msg=audit(1796316897.800:102): item=1 name="/lib64/ld-linux-x86-64.so.2" inode=2 dev=fd:00 mode=0100755 ouid=0 ogid=0 rdev=00:00 nametype=NORMAL cap_fp=0 cap_fi=0 cap_fe=0 cap_fver=0 cap_frootid=0
type=EOE msg=audit(1796316897.800:102): 
type=SYSCALL msg=audit(1796316897.900:103): arch=c000003e syscall=62
not a record
`

// TestPluginStream reads auditd's plugin output as watch --from-auditd
// --keys does: only the followed key's events, whole, from RAW and
// ENRICHED lines alike.
func TestPluginStream(t *testing.T) {
	for _, c := range []struct {
		keys []string
		want []string
	}{
		{[]string{"wtexp"}, []string{"signal kill SIGUSR1 4425->4403", `exec 4427 /bin/true ["/bin/true" "--hello world"]`}},
		{nil, []string{"signal kill SIGUSR1 4425->4403", "signal kill SIGUSR2 4426->4403", `exec 4427 /bin/true ["/bin/true" "--hello world"]`}},
	} {
		b := New()
		b.Follow(c.keys, false)
		b.FromAuditd(strings.NewReader(pluginStream))
		cfg := tracer.DefaultConfig()
		cfg.Types, _ = vocab.ParseTypes("exec,signal")
		if err := b.Start(cfg); err != nil {
			t.Fatal(err)
		}
		var col tracertest.Collector
		if err := b.Run(context.Background(), col.Emit); err != nil {
			t.Fatal(err)
		}
		_ = b.Close()
		var got []string
		for _, e := range col.Events() {
			switch e.Type {
			case vocab.TypeSignal:
				got = append(got, fmt.Sprintf("signal %s %s %d->%d", e.Syscall, e.SignalName(), e.PID, e.TargetPID))
			case vocab.TypeExec:
				got = append(got, fmt.Sprintf("exec %d %s %q", e.PID, e.Filename, e.Argv))
			}
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("keys %q:\n got  %q\n want %q", c.keys, got, c.want)
		}
		if st := b.Stats(); st.Events[vocab.TypeSignal]+st.Events[vocab.TypeExec] != uint64(len(c.want)) {
			t.Errorf("keys %q: stats %v", c.keys, st.Events)
		}
	}
}

func TestMulticastKernel(t *testing.T) {
	for rel, want := range map[string]bool{
		"3.10.0-1160.108.1.el7.x86_64": false, "2.6.32-754.el6.x86_64": false, "3.15.10": false,
		"3.16.0-4-amd64": true, "4.18.0-553.el8_10.x86_64": true, "6.18.44-fc-v1147": true, "": true,
	} {
		if got := MulticastKernel(rel); got != want {
			t.Errorf("MulticastKernel(%q) = %v, want %v", rel, got, want)
		}
	}
}
