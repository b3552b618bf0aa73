// SPDX-License-Identifier: Apache-2.0

//go:build linux

package trace

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

const (
	// HeldCommand is the hidden subcommand of the program (Options.Self)
	// that runs RunHeld with the arguments after it.
	HeldCommand = "__exec-held"
	// heldSetupFailed is the held step's exit status when it could not
	// scope the command.
	heldSetupFailed = 125
	godebugEnv      = "GODEBUG"
)

// LoginUIDBase is where the login uids a command gets under a
// LoginUIDScoper start: LoginUIDBase + tracer's pid, so concurrent traces
// differ. The kernel filters audit rules on it, and every descendant
// inherits it, so it must be nobody's real uid. Above 2^31 no allocator
// hands out ids by default (SSSD's ID mapping ends at 2000200000, FreeIPA's
// random ranges below it, systemd's container ranges at 1879048191 and its
// own documentation keeps the upper half unused); pids stop at 2^22, so the
// range ends far below 4294967294 (often nobody's) and 4294967295 (unset).
const LoginUIDBase = 4_000_000_000

// scopeAUID is the login uid of a command traced by the process pid.
func scopeAUID(pid int) uint32 { return LoginUIDBase + uint32(pid) }

// heldCmd is the command started through the held step, which waits on a
// gate (one end of a socket pair) before it execs the command, and reports
// through it the CPU time it used itself.
type heldCmd struct {
	cmd  *exec.Cmd
	gate *os.File
	auid uint32
	pty  *ptyRelay // the command's terminal, when it runs as another user on one
}

func startHeld(o Options, withLoginUID bool) (*heldCmd, error) {
	self := o.Self
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding tracer's own binary: %w", err)
		}
	}
	if _, err := exec.LookPath(o.Args[0]); err != nil {
		return nil, vocab.Usagef("cannot run %q: %w", o.Args[0], err)
	}
	// A socket pair, not a pipe: the release goes one way, the held step's
	// own rusage the other. Our end is non-blocking so that its read can
	// time out.
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("making the held step's gate: %w", err)
	}
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, fmt.Errorf("making the held step's gate: %w", err)
	}
	w, r := os.NewFile(uintptr(fds[0]), "gate"), os.NewFile(uintptr(fds[1]), "gate")
	h := &heldCmd{gate: w, auid: vocab.UnsetID}
	shim := []string{HeldCommand}
	if withLoginUID {
		h.auid = scopeAUID(os.Getpid())
		shim = append(shim, "--loginuid", strconv.FormatUint(uint64(h.auid), 10))
	}
	if c := o.Cred; c != nil {
		// The held step drops to the user itself, after it wrote the login
		// uid: that write needs CAP_AUDIT_CONTROL, which the user does not have.
		shim = append(shim, "--uid", strconv.FormatUint(uint64(c.Uid), 10),
			"--gid", strconv.FormatUint(uint64(c.Gid), 10), "--groups", joinIDs(c.Groups))
	}
	// The held step's Go runtime must not signal its own threads
	// (SIGURG, asynchronous preemption) once it is traced: trace would
	// count those signals as the command's. The step gives the command the
	// GODEBUG it had.
	env := os.Environ()
	godebug, had := os.LookupEnv(godebugEnv)
	if o.Cred != nil && !o.KeepEnv {
		// Another user's command gets none of root's environment but
		// what sudo's env_reset would keep.
		if env, err = userEnv(o.Cred.Uid); err != nil {
			r.Close()
			w.Close()
			return nil, err
		}
		had = false
	}
	if had {
		shim = append(shim, "--godebug", godebug)
	}
	shim = append(append(shim, "--"), o.Args...)
	h.cmd = exec.Command(self, shim...)
	h.cmd.Env = append(envWithout(env, godebugEnv), godebugEnv+"="+strings.TrimPrefix(godebug+",asyncpreemptoff=1", ","))
	std := []any{os.Stdin, os.Stdout, os.Stderr}
	for i, f := range []any{o.Stdin, o.Stdout, o.Stderr} {
		if f != nil {
			std[i] = f
		}
	}
	if o.Cred != nil {
		// Another user's command gets a session of its own: no way to
		// root's terminal (TIOCSTI, /dev/tty) or to signal root's jobs.
		// On a terminal it gets a pty of its own instead, relayed.
		h.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		var ctty int
		if h.pty, ctty, err = newPTYRelay(std); err != nil {
			r.Close()
			w.Close()
			return nil, fmt.Errorf("making a terminal for %s: %w", o.Args[0], err)
		}
		if h.pty != nil {
			h.cmd.SysProcAttr.Setctty, h.cmd.SysProcAttr.Ctty = true, ctty
		}
	}
	h.cmd.Stdin, _ = std[0].(io.Reader)
	h.cmd.Stdout, _ = std[1].(io.Writer)
	h.cmd.Stderr, _ = std[2].(io.Writer)
	h.cmd.ExtraFiles = []*os.File{r}
	err = h.cmd.Start()
	r.Close()
	if err == nil && h.pty != nil {
		if err = h.pty.start(); err != nil {
			_ = h.cmd.Process.Kill()
			_ = h.cmd.Wait()
		}
	}
	if err != nil {
		h.pty.abort()
		w.Close()
		return nil, fmt.Errorf("starting %s: %w", o.Args[0], err)
	}
	return h, nil
}

// release lets the command exec and waits for it: its exit status and the
// rusage of its tree (the command and the descendants it waited for, as
// /usr/bin/time counts), less what the held step used before the exec.
func (h *heldCmd) release() (Rusage, int, error) {
	start := time.Now()
	_, _ = h.gate.Write([]byte{1})
	err := h.cmd.Wait()
	ru := Rusage{Elapsed: time.Since(start)}
	h.pty.close()
	heldUser, heldSys := h.heldUsage()
	h.gate.Close()
	st := h.cmd.ProcessState
	if st == nil {
		return ru, 0, fmt.Errorf("waiting for the command: %w", err)
	}
	// The held step is a whole Go runtime started from tracer's binary:
	// tens of milliseconds that /usr/bin/time would not count.
	ru.User, ru.Sys = max(0, st.UserTime()-heldUser), max(0, st.SystemTime()-heldSys)
	code := st.ExitCode()
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	if code == heldSetupFailed {
		return ru, code, vocab.Usagef("could not prepare the command for tracing (see the message above)")
	}
	return ru, code, nil
}

// heldUsage reads what the held step reported before its exec: its own
// user and system time. Its end of the gate closed at the exec or at its
// exit, so the read ends at once; nothing reported (it never reached the
// exec) is zero.
func (h *heldCmd) heldUsage() (user, sys time.Duration) {
	_ = h.gate.SetReadDeadline(time.Now().Add(time.Second))
	b, _ := io.ReadAll(h.gate)
	var u, s int64
	if _, err := fmt.Sscanf(string(b), "%d %d", &u, &s); err != nil {
		return 0, 0
	}
	return time.Duration(u) * time.Microsecond, time.Duration(s) * time.Microsecond
}

// abort kills a held command that never ran.
func (h *heldCmd) abort() {
	h.gate.Close()
	_ = h.cmd.Process.Kill()
	_ = h.cmd.Wait()
	h.pty.close()
}

// RunHeld is the held step, run as HeldCommand with args "[--loginuid N]
// [--uid N --gid N --groups N,...] [--godebug V] -- CMD [ARGS...]": wait for
// the gate on fd 3, set the login uid if asked, drop to the user if asked,
// report its own CPU time through the gate, exec CMD. It does not return.
func RunHeld(args []string) {
	fs := flag.NewFlagSet(HeldCommand, flag.ContinueOnError)
	loginuid := fs.Int64("loginuid", -1, "login uid to set before exec")
	uid := fs.Int64("uid", -1, "user id to run CMD as")
	gid := fs.Int64("gid", -1, "group id to run CMD as")
	groups := fs.String("groups", "", "supplementary group ids, comma-separated")
	godebug := fs.String("godebug", "", "GODEBUG for CMD (unset when not given)")
	if err := fs.Parse(args); err != nil || fs.NArg() == 0 {
		fmt.Fprintf(os.Stderr, "tracer: %s: bad arguments %q\n", HeldCommand, args)
		os.Exit(heldSetupFailed)
	}
	haveGodebug := false
	fs.Visit(func(f *flag.Flag) { haveGodebug = haveGodebug || f.Name == "godebug" })
	cmd := fs.Args()

	// CMD must not inherit the gate: the exec closes it, which ends
	// tracer's read of the report.
	syscall.CloseOnExec(3)
	gate := os.NewFile(3, "gate")
	var one [1]byte
	if n, _ := gate.Read(one[:]); n != 1 {
		os.Exit(heldSetupFailed) // tracer gave up before releasing us
	}
	// loginuid is per thread and exec keeps the exec'ing thread's: write
	// it and exec from one locked thread.
	runtime.LockOSThread()
	if *loginuid >= 0 {
		if err := os.WriteFile("/proc/thread-self/loginuid", []byte(strconv.FormatInt(*loginuid, 10)), 0); err != nil {
			fmt.Fprintf(os.Stderr, "tracer: cannot give the command its own audit login uid (%v): the node may lock login uids (auditctl --loginuid-immutable); use --backend ebpf\n", err)
			os.Exit(heldSetupFailed)
		}
	}
	if *uid >= 0 {
		if err := dropPrivileges(*uid, *gid, *groups); err != nil {
			fmt.Fprintf(os.Stderr, "tracer: cannot run the command as uid %d: %v\n", *uid, err)
			os.Exit(heldSetupFailed)
		}
	}
	// Looked up as the user: its permissions decide, as they will for exec.
	path, err := exec.LookPath(cmd[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "tracer: %s: %v\n", cmd[0], err)
		os.Exit(127)
	}
	env := envWithout(os.Environ(), godebugEnv)
	if haveGodebug {
		env = append(env, godebugEnv+"="+*godebug)
	}
	// Only 0-2 pass to the command: not what tracer inherited (its
	// caller's descriptors), which another user must not get.
	if err := tracer.CloseOnExecFrom(3); err != nil {
		fmt.Fprintf(os.Stderr, "tracer: %v\n", err)
		os.Exit(heldSetupFailed)
	}
	// Last before the exec: what this step used is not CMD's (tracer
	// subtracts it from the tree's rusage).
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		fmt.Fprintf(gate, "%d %d", ru.Utime.Nano()/1000, ru.Stime.Nano()/1000)
	}
	err = syscall.Exec(path, cmd, env)
	fmt.Fprintf(os.Stderr, "tracer: exec %s: %v\n", cmd[0], err)
	os.Exit(126)
}

// dropPrivileges makes the calling thread uid:gid with exactly the given
// supplementary groups; the caller execs the command from this locked
// thread, and exec gives the new program this thread's credentials alone.
// Raw calls on purpose: syscall.Setuid and friends signal every thread of
// the process (signal 33, from comm tracer) and trace would count those
// signals as the command's. Groups first, uid last: each step but the last
// needs root. Real, effective and saved ids all change, so nothing can be
// regained, and the capabilities go with the root uid. (The 64-bit arches'
// calls take 32-bit ids.)
func dropPrivileges(uid, gid int64, groups string) error {
	gids := []uint32{}
	for _, g := range strings.Split(groups, ",") {
		if g = strings.TrimSpace(g); g == "" {
			continue
		}
		n, err := strconv.ParseUint(g, 10, 32)
		if err != nil {
			return fmt.Errorf("bad group id %q", g)
		}
		gids = append(gids, uint32(n))
	}
	if gid < 0 {
		return errors.New("no group id")
	}
	var p unsafe.Pointer
	if len(gids) > 0 {
		p = unsafe.Pointer(&gids[0])
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETGROUPS, uintptr(len(gids)), uintptr(p), 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESGID, uintptr(gid), uintptr(gid), uintptr(gid)); e != 0 {
		return fmt.Errorf("setresgid %d: %w", gid, e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, uintptr(uid), uintptr(uid), uintptr(uid)); e != 0 {
		return fmt.Errorf("setresuid %d: %w", uid, e)
	}
	return nil
}

// LookupUser resolves a user, by name or numeric id, into its uid, primary
// gid and supplementary groups, for Options.Cred; "" is nil: the command
// runs as tracer does.
func LookupUser(name string) (*syscall.Credential, error) {
	if name == "" {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		if _, nerr := strconv.ParseUint(name, 10, 32); nerr == nil {
			u, err = user.LookupId(name)
		}
	}
	if err != nil {
		return nil, vocab.Usagef("unknown --user %q: give a user name (or uid) that exists on this node", name)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, vocab.Usagef("--user %q has a uid or gid that is not a number (%s:%s)", name, u.Uid, u.Gid)
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("reading the groups of user %s: %w", name, err)
	}
	for _, g := range ids {
		n, err := strconv.ParseUint(g, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("user %s: group id %q is not a number", name, g)
		}
		cred.Groups = append(cred.Groups, uint32(n))
	}
	return cred, nil
}

// userEnv is the reset environment of the command run as uid
// (tracer.ResetEnv): its home, name and login shell from the user
// database.
func userEnv(uid uint32) ([]string, error) {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return nil, fmt.Errorf("looking up uid %d: %w", uid, err)
	}
	return tracer.ResetEnv(os.Environ(), u.Username, u.HomeDir, loginShell(u.Username)), nil
}

// loginShell is the user's shell as the name service has it (os/user does
// not give it), /bin/sh when it cannot tell.
func loginShell(name string) string {
	out, err := exec.Command("getent", "passwd", name).Output()
	if f := strings.Split(strings.TrimSpace(string(out)), ":"); err == nil && len(f) == 7 && f[6] != "" {
		return f[6]
	}
	return "/bin/sh"
}

// envWithout returns env without the variable name.
func envWithout(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

func joinIDs(ids []uint32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(uint64(id), 10)
	}
	return strings.Join(s, ",")
}
