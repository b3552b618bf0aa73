// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tracer-dev/tracer/tracer/sink"
)

// RunLoop runs the Go half of a built-in workload (`tracer bench workload
// NAME`): signal-storm sends itself SIGUSR1 n times, syscall-tax calls
// getppid n times, exec-storm spawns /bin/true n times (the paced variant
// of the sweep; the bench's own exec-storm is a shell loop). With rate > 0
// the loop keeps to rate events a second, in bursts of about a
// millisecond's worth. At the end it writes the process's thread ids to
// tidsFile (when set), so that the counting can tell the runtime's thread
// creations from the workload's events.
//
// The loops use RawSyscall: no scheduler bookkeeping around each call, so a
// call costs what it costs in C.
func RunLoop(name string, n int64, rate float64, tidsFile string) error {
	var one func() error
	switch name {
	case "signal-storm":
		// Ignored, the kernel discards the signal at once: the cost measured
		// is the kill syscall and what watching adds to it.
		signal.Ignore(syscall.SIGUSR1)
		pid := uintptr(syscall.Getpid())
		one = func() error {
			if _, _, e := syscall.RawSyscall(syscall.SYS_KILL, pid, uintptr(syscall.SIGUSR1), 0); e != 0 {
				return fmt.Errorf("kill: %w", e)
			}
			return nil
		}
	case "syscall-tax":
		one = func() error {
			syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
			return nil
		}
	case "signal-rate":
		var done func() error
		var err error
		if one, done, err = signalChild(); err != nil {
			return err
		}
		paced, err := pace(n, rate, one)
		if err != nil {
			_ = done()
			return err
		}
		if err := done(); err != nil {
			return err
		}
		if tidsFile == "" {
			return nil
		}
		return writeTids(tidsFile, paced)
	case "exec-storm", "exec-rate":
		attr := &syscall.ProcAttr{Files: []uintptr{0, 1, 2}}
		argv := []string{"true"}
		one = func() error {
			pid, err := syscall.ForkExec("/bin/true", argv, attr)
			if err != nil {
				return fmt.Errorf("spawning /bin/true: %w", err)
			}
			var ws syscall.WaitStatus
			for {
				_, err = syscall.Wait4(pid, &ws, 0, nil)
				if err != syscall.EINTR {
					break
				}
			}
			if err != nil {
				return fmt.Errorf("waiting for /bin/true: %w", err)
			}
			return nil
		}
	default:
		return fmt.Errorf("unknown loop %q: use signal-storm, syscall-tax, exec-storm, exec-rate or signal-rate", name)
	}
	paced, err := pace(n, rate, one)
	if err != nil {
		return err
	}
	if tidsFile == "" {
		return nil
	}
	return writeTids(tidsFile, paced)
}

// signalChild starts the process signal-rate signals: /bin/cat reading a
// pipe, with SIGUSR1 ignored (an ignored disposition survives exec), so
// that each kill is discarded at once. one sends it a signal; done closes
// its input and waits for it to end, with no signal of ours.
func signalChild() (one, done func() error, err error) {
	signal.Ignore(syscall.SIGUSR1)
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, fmt.Errorf("making pipe: %w", err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	defer null.Close()
	pid, err := syscall.ForkExec("/bin/cat", []string{"cat"}, &syscall.ProcAttr{Files: []uintptr{uintptr(p[0]), null.Fd(), 2}})
	syscall.Close(p[0])
	if err != nil {
		syscall.Close(p[1])
		return nil, nil, fmt.Errorf("starting /bin/cat: %w", err)
	}
	one = func() error {
		if _, _, e := syscall.RawSyscall(syscall.SYS_KILL, uintptr(pid), uintptr(syscall.SIGUSR1), 0); e != 0 {
			return fmt.Errorf("kill: %w", e)
		}
		return nil
	}
	done = func() error {
		syscall.Close(p[1])
		var ws syscall.WaitStatus
		for {
			_, err := syscall.Wait4(pid, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				return fmt.Errorf("waiting for /bin/cat: %w", err)
			}
			if !ws.Exited() || ws.ExitStatus() != 0 {
				return fmt.Errorf("/bin/cat ended with %v", ws)
			}
			return nil
		}
	}
	return one, done, nil
}

// pace calls one n times, at rate calls a second when rate > 0: a burst of
// about a millisecond's worth, then a sleep until the schedule catches up.
// It returns how long the calls took: n/rate when the rate held.
func pace(n int64, rate float64, one func() error) (time.Duration, error) {
	burst := int64(1)
	if rate > 0 {
		burst = max(1, int64(rate/1000))
	}
	start := time.Now()
	for i := int64(0); i < n; {
		end := min(n, i+burst)
		for ; i < end; i++ {
			if err := one(); err != nil {
				return 0, err
			}
		}
		if rate > 0 {
			due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
	}
	return time.Since(start), nil
}

// writeTids writes the process's thread ids, one a line, and the time the
// paced loop took (a line "paced SECONDS"): a rate workload's rate is
// judged over the loop, not over the process's start and end.
func writeTids(path string, paced time.Duration) error {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("listing threads: %w", err)
	}
	var tids []int
	for _, e := range ents {
		if t, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, t)
		}
	}
	sort.Ints(tids)
	var b strings.Builder
	for _, t := range tids {
		fmt.Fprintln(&b, t)
	}
	fmt.Fprintf(&b, "paced %.6f\n", paced.Seconds())
	// A hidden flag, but a path given on the command line all the same.
	f, err := sink.CreateOutput(path)
	if err != nil {
		return fmt.Errorf("writing thread ids: %w", err)
	}
	_, err = f.WriteString(b.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing thread ids: %w", err)
	}
	return nil
}

// readTids reads what writeTids wrote: the thread ids, and the paced
// loop's seconds; a missing file gives none.
func readTids(path string) (map[uint32]bool, float64, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("reading thread ids: %w", err)
	}
	out := map[uint32]bool{}
	var paced float64
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if v, ok := strings.CutPrefix(l, "paced "); ok {
			if paced, err = strconv.ParseFloat(v, 64); err != nil {
				return nil, 0, fmt.Errorf("thread ids file %s: bad line %q", path, l)
			}
			continue
		}
		t, err := strconv.ParseUint(strings.TrimSpace(l), 10, 32)
		if err != nil {
			return nil, 0, fmt.Errorf("thread ids file %s: bad line %q", path, l)
		}
		out[uint32(t)] = true
	}
	return out, paced, nil
}
