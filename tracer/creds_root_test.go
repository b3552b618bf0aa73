// SPDX-License-Identifier: Apache-2.0

//go:build linux

package tracer_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/audit"
	"github.com/tracer-dev/tracer/tracer/bpfbackend"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

const nobody = 65534

// A setuid-root program run by nobody from a known directory, without a
// terminal, execs /bin/true; then the program runs as root on a pty. On
// both backends the execs show uid 65534 with euid 0 (and the terminal,
// the session and the login uid the kernel has); the audit backend also
// gives the working directory, the caller's program and the rule's key.
func TestCredsTTYSessionBothBackends(t *testing.T) {
	tracertest.LockAudit(t)
	// A directory nobody can enter but not write: the setuid copy lives
	// there, and is the workloads' working directory.
	dir, err := os.MkdirTemp("", "tracer-creds-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	suid := filepath.Join(dir, "workload-suid")
	copyFile(t, tracertest.BuildWorkload(t), suid)
	if err := os.Chown(suid, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(suid, os.ModeSetuid|0o755); err != nil { // os.FileMode: 0o4000 is not setuid
		t.Fatal(err)
	}
	ses, auid := procUint(t, "sessionid"), procUint(t, "loginuid")
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatal(err)
	}
	setpriv = resolved(t, setpriv)

	cfg := tracer.DefaultConfig()
	cfg.Types, _ = vocab.ParseTypes("all")
	for _, r := range idBackends() {
		t.Run(r.name, func(t *testing.T) {
			cfg.Probes = r.probes
			s := tracertest.StartSession(t, r.b, cfg)
			// As nobody, in a session of its own (no terminal), after a
			// login as uid 1000 (a new audit session, whose id it prints).
			var out strings.Builder
			cmd := exec.Command("/bin/sh", "-c", `echo 1000 > /proc/self/loginuid && cat /proc/self/sessionid &&
				exec setpriv --reuid=65534 --regid=65534 --clear-groups "$0" exec 1 /bin/true exit 0`, suid)
			cmd.Dir, cmd.Stdout = dir, &out
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			execs := runTree(t, s, cmd)
			setuidExec := execs["/bin/true"]
			// Its own exec: the ids after it, a setuid program's.
			if e := execs[suid]; e.UID != nobody || e.EUID != 0 {
				t.Errorf("exec of the setuid program: uid %d euid %d, want 65534 0", e.UID, e.EUID)
			}
			loginSes, err := strconv.ParseUint(strings.TrimSpace(out.String()), 10, 32)
			if err != nil {
				t.Fatalf("session id %q: %v", out.String(), err)
			}
			// As root, on a pty.
			ptm, pts, ptsName := openPTY(t)
			cmd = exec.Command(suid, "exec", "1", "/bin/true", "exit", "0")
			cmd.Dir = dir
			cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			go io.Copy(io.Discard, ptm) //nolint:errcheck // drains what the workload prints
			ttyExec := runTree(t, s, cmd)["/bin/true"]
			s.Stop()

			e := setuidExec
			if e.UID != nobody || e.EUID != 0 || e.SUID != 0 || e.FSUID != 0 || e.GID != nobody || e.EGID != nobody || !e.HasCreds {
				t.Errorf("setuid exec: uid %d euid %d suid %d fsuid %d gid %d egid %d (creds %v); want 65534 0 0 0 65534 65534",
					e.UID, e.EUID, e.SUID, e.FSUID, e.GID, e.EGID, e.HasCreds)
			}
			if e.TTY != "" {
				t.Errorf("setuid exec without a terminal: tty %q", e.TTY)
			}
			if e.Session != uint32(loginSes) || e.AUID != 1000 || loginSes == uint64(vocab.UnsetID) {
				t.Errorf("exec after a login: ses %d auid %d; want the workload's /proc/self/sessionid %d and loginuid 1000", e.Session, e.AUID, loginSes)
			}
			if e := ttyExec; e.Session != ses || e.AUID != auid {
				t.Errorf("exec on a pty: ses %d auid %d; want /proc/self's %d %d", e.Session, e.AUID, ses, auid)
			}
			if e := ttyExec; e.UID != 0 || e.EUID != 0 || e.TTY != ptsName {
				t.Errorf("exec on %s: uid %d euid %d tty %q", ptsName, e.UID, e.EUID, e.TTY)
			}
			for _, e := range []tracer.Event{setuidExec, ttyExec} {
				switch r.name {
				case "audit":
					me, _ := tracer.ReadProcIdentity(uint32(os.Getpid()))
					if want := auditrules.InstanceKey(os.Getpid(), me.ExecID.Start); e.Key != want {
						t.Errorf("audit key %q, want this tracer's rules' %q", e.Key, want)
					}
				default:
					if e.Key != "" {
						t.Errorf("ebpf key %q: a field it does not fill", e.Key)
					}
				}
				// Both backends: the directory, and the caller's program
				// before the exec, the setuid program.
				if e.Cwd != dir {
					t.Errorf("%s cwd %q, want %q", r.name, e.Cwd, dir)
				}
				if e.Exe != suid {
					t.Errorf("%s exe %q, want the caller's program before the exec, %q", r.name, e.Exe, suid)
				}
			}
			// The setuid program's own exec: by setpriv, the program
			// before it (resolved, as the kernel names it).
			if e := execs[suid]; e.Exe != setpriv || e.Cwd != dir {
				t.Errorf("%s exec of the setuid program: exe %q cwd %q, want %q %q", r.name, e.Exe, e.Cwd, setpriv, dir)
			}
			t.Logf("setuid exec: uid %d euid %d ses %d tty %q cwd %q exe %q key %q; on the pty: tty %q",
				setuidExec.UID, setuidExec.EUID, setuidExec.Session, setuidExec.TTY, setuidExec.Cwd, setuidExec.Exe, setuidExec.Key, ttyExec.TTY)
		})
	}
}

// runTree runs cmd, a workload that execs /bin/true once, and returns
// the execs of its tree by filename once the workload's exit is in.
func runTree(t *testing.T, s *tracertest.Session, cmd *exec.Cmd) map[string]tracer.Event {
	t.Helper()
	if err := cmd.Run(); err != nil {
		t.Fatalf("workload: %v", err)
	}
	root := uint32(cmd.Process.Pid)
	deadline := time.Now().Add(10 * time.Second)
	for {
		execs := map[string]tracer.Event{}
		exited := false
		for _, e := range s.Tree(root) {
			if e.Type == vocab.TypeExec {
				execs[e.Filename] = e
			}
			exited = exited || e.Type == vocab.TypeExit && e.PID == root
		}
		if _, ok := execs["/bin/true"]; ok && exited {
			return execs
		}
		if time.Now().After(deadline) {
			t.Fatalf("no exec of /bin/true under pid %d: %v", root, s.Tree(root))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o700); err != nil {
		t.Fatal(err)
	}
}

// procUint reads /proc/self/NAME, a number.
func procUint(t *testing.T, name string) uint32 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/" + name)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(n)
}

// openPTY opens a pty pair and returns both ends and the terminal's name
// as the kernel has it ("pts3").
func openPTY(t *testing.T) (ptm, pts *os.File, name string) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	ptm = os.NewFile(uintptr(fd), "/dev/ptmx")
	t.Cleanup(func() { ptm.Close() })
	var unlock int32
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); errno != 0 {
		t.Fatalf("unlockpt: %v", errno)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("TIOCGPTN: %v", err)
	}
	pts, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pts.Close() })
	return ptm, pts, "pts" + strconv.Itoa(n)
}

// idBackends are the backends, and eBPF's syscall probe set, whose ids
// and paths the tests compare with one another.
func idBackends() []struct {
	name, probes string
	b            tracer.Backend
} {
	return []struct {
		name, probes string
		b            tracer.Backend
	}{{"audit", "", audit.New()}, {"ebpf", "", bpfbackend.New()}, {"ebpf-syscalls", "syscalls", bpfbackend.New()}}
}

// resolved is path with its symbolic links resolved, as both backends
// report a program.
func resolved(t *testing.T, path string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
