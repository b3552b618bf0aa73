//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/audit"
)

type traceOptions struct {
	streamFlags
	user string
}

func newTraceCmd() *cobra.Command {
	var o traceOptions
	cmd := &cobra.Command{
		Use:   "trace --backend audit|ebpf [flags] -- CMD [ARGS...]",
		Short: "Run CMD, trace only its process tree, print counts and its resource use",
		Long: "trace runs CMD and counts the execs, forks and signals of CMD and every\n" +
			"descendant, keyed as bpftrace maps would be, then prints the counts and the\n" +
			"tree's rusage. CMD's stdin, stdout and stderr pass through; the report goes\n" +
			"to stderr or --output. The exit status is CMD's.",
		Example: `  tracer trace --backend ebpf -- sh ./cis-check.sh
  tracer trace --backend audit --format json -o counts.json -- make -j2
  tracer trace --backend ebpf --events signal --signal USR1 -- ./app
  tracer trace --backend ebpf --user nobody -- ./untrusted-script`,
		Args:         cobra.MinimumNArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTrace(cmd.Context(), &o, args)
		},
	}
	o.register(cmd, "table", "report format: table or json")
	cmd.Flags().StringVarP(&o.user, "user", "u", "", "run CMD as this user: its uid, primary gid and supplementary groups (as strace -u does; the environment is kept)")
	return cmd
}

// scopeAUID is the login uid trace gives its command under the audit
// backend: the kernel filters audit rules on it, and every descendant
// inherits it. It is derived from tracer's pid so concurrent traces differ,
// and sits far above real user ids.
func scopeAUID() uint32 { return 2_000_000_000 + uint32(os.Getpid()%100_000_000) }

func runTrace(parent context.Context, o *traceOptions, args []string) error {
	cfg, err := o.config()
	if err != nil {
		return err
	}
	if o.format != "table" && o.format != "json" {
		return tracer.Usagef("unknown format %q: use table or json", o.format)
	}
	b, err := newBackend(o.backend)
	if err != nil {
		return err
	}
	cred, err := lookupCredential(o.user)
	if err != nil {
		return err
	}
	if err := needRoot("tracer trace"); err != nil {
		return err
	}
	var report io.Writer = os.Stderr
	if o.output != "" {
		f, err := openOutput(o.output)
		if err != nil {
			return err
		}
		defer f.Close()
		report = f
	}

	// Start CMD held before exec, so that the backend is scoped to it
	// before it makes its first event.
	held, err := startHeld(b.Name(), args, cred)
	if err != nil {
		return err
	}
	pid := uint32(held.cmd.Process.Pid)
	switch b.Name() {
	case "ebpf":
		// Count in kernel maps, with no per-event transfer, unless metrics
		// are served: they count events as the pipeline sees them.
		cfg.PID, cfg.CountOnly = pid, o.metricsAddr == ""
	case "audit":
		cfg.ScopeAUID = held.auid
	}

	p := tracer.NewPipeline(cfg)
	counts := tracer.NewCounts()
	p.Sinks = append(p.Sinks, tracer.CountSink{C: counts})
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	ready, err := startMetrics(ctx, o.metricsAddr, p, b, metricsOptions{byComm: o.metricsComm})
	if err != nil {
		held.abort()
		return err
	}
	backendCfg := cfg
	backendCfg.Types = tracer.BackendTypes(cfg)
	if err := b.Start(backendCfg); err != nil {
		held.abort()
		_ = b.Close()
		return err
	}
	defer b.Close()
	if held.auid != tracer.UnsetID {
		// After Start: the kernel drops user messages while audit is
		// disabled, and the backend enables it for the session.
		if err := linkAuditTrail(held, args); err != nil {
			held.abort()
			return err
		}
	}
	ready()
	slog.Debug("tracing", "backend", b.Name(), "pid", pid, "auid", held.auid)
	runDone := make(chan error, 1)
	go func() { runDone <- b.Run(ctx, p.Emit) }()

	// Ctrl-C and friends go to CMD; tracer waits for it, then reports.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	go func() {
		for s := range sigs {
			_ = held.cmd.Process.Signal(s)
		}
	}()

	ru, code, waitErr := held.release()
	cancel()
	runErr := <-runDone
	st := p.Stats(b)
	if c, ok := b.(interface {
		Counts() (*tracer.Counts, error)
	}); ok && cfg.CountOnly {
		if counts, err = c.Counts(); err != nil {
			return fmt.Errorf("reading counts: %w", err)
		}
	}
	closeErr := b.Close()
	if waitErr != nil {
		return waitErr
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	if closeErr != nil {
		slog.Warn("removing rules or probes", "err", closeErr)
	}
	rep := &tracer.TraceReport{Backend: b.Name(), Counts: counts, Lost: st.TotalLost(), Rusage: ru, ExitCode: code}
	if o.format == "json" {
		data, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		_, err = report.Write(append(data, '\n'))
		if err != nil {
			return err
		}
	} else if err := rep.WriteTable(report); err != nil {
		return err
	}
	if code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// linkAuditTrail writes one record into the node's audit trail that ties
// CMD's synthetic login uid to the real login uid of whoever ran tracer:
// every record of CMD's tree carries only the synthetic one, and the
// node's auditors must still see who ran it. ausearch -m TRUSTED_APP
// finds it; ausearch -ua <auid_synthetic> finds what CMD did.
func linkAuditTrail(h *heldCmd, args []string) error {
	realAUID := "4294967295" // unset: tracer was not started from a login
	if b, err := os.ReadFile("/proc/self/loginuid"); err == nil {
		realAUID = strings.TrimSpace(string(b))
	}
	// The kernel caps a record near 9 KB and hex doubles the command.
	cmdline := strings.Join(args, " ")
	if len(cmdline) > 2048 {
		cmdline = cmdline[:2048]
	}
	text := fmt.Sprintf("op=tracer-trace auid_real=%s auid_synthetic=%d %s pid=%d res=success",
		realAUID, h.auid, audit.EncodeField("cmd", cmdline), h.cmd.Process.Pid)
	if err := audit.WriteUserMessage(text); err != nil {
		return tracer.Usagef("cannot write the audit record that ties the command's login uid %d to yours (%v): trace --backend audit needs CAP_AUDIT_WRITE; or use --backend ebpf", h.auid, err)
	}
	slog.Debug("audit trail linked", "record", text)
	return nil
}

// heldCmd is CMD started through tracer's own binary, which waits on a pipe
// before it execs CMD.
type heldCmd struct {
	cmd  *exec.Cmd
	gate *os.File
	auid uint32
}

func startHeld(backend string, args []string, cred *syscall.Credential) (*heldCmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding tracer's own binary: %w", err)
	}
	if _, err := exec.LookPath(args[0]); err != nil {
		return nil, tracer.Usagef("cannot run %q: %v", args[0], err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	h := &heldCmd{gate: w, auid: tracer.UnsetID}
	shim := []string{heldCmdName}
	if backend == "audit" {
		h.auid = scopeAUID()
		shim = append(shim, "--loginuid", strconv.FormatUint(uint64(h.auid), 10))
	}
	if cred != nil {
		// The shim drops to the user itself, after it wrote the login uid:
		// that write needs CAP_AUDIT_CONTROL, which the user does not have.
		shim = append(shim, "--uid", strconv.FormatUint(uint64(cred.Uid), 10),
			"--gid", strconv.FormatUint(uint64(cred.Gid), 10), "--groups", joinIDs(cred.Groups))
	}
	// The held step's Go runtime must not signal its own threads
	// (SIGURG, asynchronous preemption) once it is traced: trace would
	// count those signals as CMD's. The shim gives CMD the GODEBUG it had.
	godebug, had := os.LookupEnv(godebugEnv)
	if had {
		shim = append(shim, "--godebug", godebug)
	}
	shim = append(append(shim, "--"), args...)
	h.cmd = exec.Command(self, shim...)
	h.cmd.Env = append(envWithout(os.Environ(), godebugEnv), godebugEnv+"="+strings.TrimPrefix(godebug+",asyncpreemptoff=1", ","))
	h.cmd.Stdin, h.cmd.Stdout, h.cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	h.cmd.ExtraFiles = []*os.File{r}
	if err := h.cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("starting %s: %w", args[0], err)
	}
	r.Close()
	return h, nil
}

// release lets CMD exec and waits for it: its exit status and the rusage of
// its tree (CMD and the descendants it waited for, as /usr/bin/time counts).
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

const (
	heldCmdName = "__exec-held"
	// heldSetupFailed is the shim's exit status when it could not scope CMD.
	heldSetupFailed = 125
)

// newHeldCmd is the hidden shim: wait for the gate on fd 3, set the login
// uid if asked, drop to the user if asked, exec CMD.
func newHeldCmd() *cobra.Command {
	var loginuid, uid, gid int64
	var groups, godebug string
	cmd := &cobra.Command{
		Use:    heldCmdName + " [--loginuid N] [--uid N --gid N --groups N,...] -- CMD [ARGS...]",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			gate := os.NewFile(3, "gate")
			var one [1]byte
			if n, _ := gate.Read(one[:]); n != 1 {
				os.Exit(heldSetupFailed) // tracer gave up before releasing us
			}
			gate.Close()
			// loginuid is per thread and exec keeps the exec'ing thread's:
			// write it and exec from one locked thread.
			runtime.LockOSThread()
			if loginuid >= 0 {
				if err := os.WriteFile("/proc/thread-self/loginuid", []byte(strconv.FormatInt(loginuid, 10)), 0); err != nil {
					fmt.Fprintf(os.Stderr, "tracer: cannot give the command its own audit login uid (%v): the node may lock login uids (auditctl --loginuid-immutable); use --backend ebpf\n", err)
					os.Exit(heldSetupFailed)
				}
			}
			if uid >= 0 {
				if err := dropPrivileges(uid, gid, groups); err != nil {
					fmt.Fprintf(os.Stderr, "tracer: cannot run the command as uid %d: %v\n", uid, err)
					os.Exit(heldSetupFailed)
				}
			}
			// Looked up as the user: its permissions decide, as they will for exec.
			path, err := exec.LookPath(args[0])
			if err != nil {
				fmt.Fprintf(os.Stderr, "tracer: %s: %v\n", args[0], err)
				os.Exit(127)
			}
			env := envWithout(os.Environ(), godebugEnv)
			if c.Flags().Changed("godebug") {
				env = append(env, godebugEnv+"="+godebug)
			}
			err = syscall.Exec(path, args, env)
			fmt.Fprintf(os.Stderr, "tracer: exec %s: %v\n", args[0], err)
			os.Exit(126)
			return nil
		},
	}
	cmd.Flags().Int64Var(&loginuid, "loginuid", -1, "login uid to set before exec")
	cmd.Flags().Int64Var(&uid, "uid", -1, "user id to run CMD as")
	cmd.Flags().Int64Var(&gid, "gid", -1, "group id to run CMD as")
	cmd.Flags().StringVar(&groups, "groups", "", "supplementary group ids, comma-separated")
	cmd.Flags().StringVar(&godebug, "godebug", "", "GODEBUG for CMD (unset when not given)")
	return cmd
}

// dropPrivileges makes the calling thread uid:gid with exactly the given
// supplementary groups; the caller execs CMD from this locked thread, and
// exec gives the new program this thread's credentials alone. Raw calls on
// purpose: syscall.Setuid and friends signal every thread of the process
// (signal 33, from comm tracer) and trace would count those signals as
// CMD's. Groups first, uid last: each step but the last needs root. Real,
// effective and saved ids all change, so nothing can be regained, and the
// capabilities go with the root uid. (The 64-bit arches' calls take 32-bit
// ids.)
func dropPrivileges(uid, gid int64, groups string) error {
	gids := []uint32{}
	for _, g := range splitList(groups) {
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

// lookupCredential resolves --user, by name or numeric id, into its uid,
// primary gid and supplementary groups; "" is nil: CMD runs as tracer does.
func lookupCredential(name string) (*syscall.Credential, error) {
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

const godebugEnv = "GODEBUG"

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
