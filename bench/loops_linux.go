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

	"github.com/tracer-dev/tracer/tracer"
)

// RunLoop runs the Go half of a built-in workload (`tracer workload NAME`):
// signal-storm sends itself SIGUSR1 n times, syscall-tax calls getppid n
// times. At the end it writes the process's thread ids to tidsFile (when
// set), so that the counting can tell the runtime's thread creations from
// the workload's events.
//
// The loops use RawSyscall: no scheduler bookkeeping around each call, so a
// call costs what it costs in C.
func RunLoop(name string, n int64, tidsFile string) error {
	switch name {
	case "signal-storm":
		// Ignored, the kernel discards the signal at once: the cost measured
		// is the kill syscall and what watching adds to it.
		signal.Ignore(syscall.SIGUSR1)
		pid := uintptr(syscall.Getpid())
		for i := int64(0); i < n; i++ {
			if _, _, e := syscall.RawSyscall(syscall.SYS_KILL, pid, uintptr(syscall.SIGUSR1), 0); e != 0 {
				return fmt.Errorf("kill: %w", e)
			}
		}
	case "syscall-tax":
		for i := int64(0); i < n; i++ {
			syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
		}
	default:
		return fmt.Errorf("unknown loop %q: use signal-storm or syscall-tax", name)
	}
	if tidsFile == "" {
		return nil
	}
	return writeTids(tidsFile)
}

func writeTids(path string) error {
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
	// A hidden flag, but a path given on the command line all the same.
	f, err := tracer.CreateOutput(path)
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

// readTids reads what writeTids wrote; a missing file gives none.
func readTids(path string) (map[uint32]bool, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading thread ids: %w", err)
	}
	out := map[uint32]bool{}
	for _, f := range strings.Fields(string(b)) {
		t, err := strconv.ParseUint(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("thread ids file %s: bad line %q", path, f)
		}
		out[uint32(t)] = true
	}
	return out, nil
}
