//go:build linux

package trace

import (
	"errors"
	"flag"
	"fmt"
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

// scopeAUID is the login uid a command gets under a LoginUIDScoper: the
// kernel filters audit rules on it, and every descendant inherits it. It
// is derived from tracer's pid so concurrent traces differ, and sits far
// above real user ids.
func scopeAUID() uint32 { return 2_000_000_000 + uint32(os.Getpid()%100_000_000) }

// heldCmd is the command started through the held step, which waits on a
// pipe before it execs the command.
type heldCmd struct {
	cmd  *exec.Cmd
	gate *os.File
	auid uint32
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
		return nil, tracer.Usagef("cannot run %q: %w", o.Args[0], err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("making the held step's gate: %w", err)
	}
	h := &heldCmd{gate: w, auid: tracer.UnsetID}
	shim := []string{HeldCommand}
	if withLoginUID {
		h.auid = scopeAUID()
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
	godebug, had := os.LookupEnv(godebugEnv)
	if had {
		shim = append(shim, "--godebug", godebug)
	}
	shim = append(append(shim, "--"), o.Args...)
	h.cmd = exec.Command(self, shim...)
	h.cmd.Env = append(envWithout(os.Environ(), godebugEnv), godebugEnv+"="+strings.TrimPrefix(godebug+",asyncpreemptoff=1", ","))
	h.cmd.Stdin, h.cmd.Stdout, h.cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if o.Stdin != nil {
		h.cmd.Stdin = o.Stdin
	}
	if o.Stdout != nil {
		h.cmd.Stdout = o.Stdout
	}
	if o.Stderr != nil {
		h.cmd.Stderr = o.Stderr
	}
	h.cmd.ExtraFiles = []*os.File{r}
	if err := h.cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("starting %s: %w", o.Args[0], err)
	}
	r.Close()
	return h, nil
}

// release lets the command exec and waits for it: its exit status and the
// rusage of its tree (the command and the descendants it waited for, as
// /usr/bin/time counts).
func (h *heldCmd) release() (tracer.Rusage, int, error) {
	start := time.Now()
	_, _ = h.gate.Write([]byte{1})
	h.gate.Close()
	err := h.cmd.Wait()
	ru := tracer.Rusage{Elapsed: time.Since(start)}
	st := h.cmd.ProcessState
	if st == nil {
		return ru, 0, fmt.Errorf("waiting for the command: %w", err)
	}
	ru.User, ru.Sys = st.UserTime(), st.SystemTime()
	code := st.ExitCode()
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	if code == heldSetupFailed {
		return ru, code, tracer.Usagef("could not prepare the command for tracing (see the message above)")
	}
	return ru, code, nil
}

// abort kills a held command that never ran.
func (h *heldCmd) abort() {
	h.gate.Close()
	_ = h.cmd.Process.Kill()
	_ = h.cmd.Wait()
}

// RunHeld is the held step, run as HeldCommand with args "[--loginuid N]
// [--uid N --gid N --groups N,...] [--godebug V] -- CMD [ARGS...]": wait for
// the gate on fd 3, set the login uid if asked, drop to the user if asked,
// exec CMD. It does not return.
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

	gate := os.NewFile(3, "gate")
	var one [1]byte
	if n, _ := gate.Read(one[:]); n != 1 {
		os.Exit(heldSetupFailed) // tracer gave up before releasing us
	}
	gate.Close()
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
		return nil, tracer.Usagef("unknown --user %q: give a user name (or uid) that exists on this node", name)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, tracer.Usagef("--user %q has a uid or gid that is not a number (%s:%s)", name, u.Uid, u.Gid)
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
