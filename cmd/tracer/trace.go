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
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/tracer"
)

type traceOptions struct {
	streamFlags
}

func newTraceCmd() *cobra.Command {
	var o traceOptions
	cmd := &cobra.Command{
		Use:   "trace --backend audit|ebpf [flags] -- CMD [ARGS...]",
		Short: "Run CMD, trace only its process tree, print counts and its resource use",
		Long: "trace runs CMD and counts the execs, forks and signals of CMD and every\n" +
			"descendant, like the seed's bpftrace maps, then prints the counts and the\n" +
			"tree's rusage. CMD's stdin, stdout and stderr pass through; the report goes\n" +
			"to stderr or --output. The exit status is CMD's.",
		Example: `  tracer trace --backend ebpf -- sh ./cis-check.sh
  tracer trace --backend audit --format json -o counts.json -- make -j2
  tracer trace --backend ebpf --events signal --signal USR1 -- ./app`,
		Args:         cobra.MinimumNArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTrace(cmd.Context(), &o, args)
		},
	}
	o.register(cmd, "table", "report format: table or json")
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
	held, err := startHeld(b.Name(), args)
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

// heldCmd is CMD started through tracer's own binary, which waits on a pipe
// before it execs CMD.
type heldCmd struct {
	cmd  *exec.Cmd
	gate *os.File
	auid uint32
}

func startHeld(backend string, args []string) (*heldCmd, error) {
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
	shim = append(append(shim, "--"), args...)
	h.cmd = exec.Command(self, shim...)
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
// uid if asked, exec CMD.
func newHeldCmd() *cobra.Command {
	var loginuid int64
	cmd := &cobra.Command{
		Use:    heldCmdName + " [--loginuid N] -- CMD [ARGS...]",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
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
			path, err := exec.LookPath(args[0])
			if err != nil {
				fmt.Fprintf(os.Stderr, "tracer: %s: %v\n", args[0], err)
				os.Exit(127)
			}
			err = syscall.Exec(path, args, os.Environ())
			fmt.Fprintf(os.Stderr, "tracer: exec %s: %v\n", args[0], err)
			os.Exit(126)
			return nil
		},
	}
	cmd.Flags().Int64Var(&loginuid, "loginuid", -1, "login uid to set before exec")
	return cmd
}
