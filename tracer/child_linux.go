// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// What tracer's children (trace's command, bench's workloads) get of it:
// another user's process runs with its own session, a reset environment
// and no descriptor but 0-2, so that it cannot reach root's terminal,
// secrets in root's environment or files tracer inherited.

// SafePath is the PATH a child with a reset environment gets (sudo's
// secure_path).
const SafePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// keptEnv is what ResetEnv keeps of the caller's environment, as sudo's
// env_reset does: how to draw on the terminal and which language to speak.
var keptEnv = []string{"TERM", "COLORTERM", "COLORFGBG", "LANG", "LANGUAGE", "TZ"}

// ResetEnv is the environment of a process run as another user: the
// variables of keptEnv and LC_* taken from environ, PATH set to SafePath,
// and HOME, USER, LOGNAME and SHELL set for the user.
func ResetEnv(environ []string, name, home, shell string) []string {
	var env []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		for _, keep := range keptEnv {
			if k == keep {
				env = append(env, kv)
			}
		}
		if strings.HasPrefix(k, "LC_") {
			env = append(env, kv)
		}
	}
	return append(env, "PATH="+SafePath, "HOME="+home, "USER="+name, "LOGNAME="+name, "SHELL="+shell)
}

// CloseOnExecFrom marks every descriptor from fd up close-on-exec, so that
// what the calling process inherited without the flag does not pass to a
// program it execs or starts (descriptors given to exec.Cmd as Stdin...
// ExtraFiles are dup'ed in the child and so still pass).
func CloseOnExecFrom(fd int) error {
	err := unix.CloseRange(uint(fd), math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if err == nil || !(errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL)) {
		return err
	}
	// Before Linux 5.11 (RHEL 7, 8): one by one.
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("listing open descriptors: %w", err)
	}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n < fd {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(n), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && !errors.Is(err, unix.EBADF) {
			return fmt.Errorf("marking descriptor %d close-on-exec: %w", n, err)
		}
	}
	return nil
}

// OpenPTY opens a new pseudo-terminal: its master (non-blocking, so that
// reads can time out) and its slave, neither a controlling terminal yet.
func OpenPTY() (master, slave *os.File, err error) {
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening /dev/ptmx: %w", err)
	}
	master = os.NewFile(uintptr(mfd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("unlocking the pty: %w", err)
	}
	n, err := unix.IoctlGetInt(mfd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("naming the pty: %w", err)
	}
	name := "/dev/pts/" + strconv.Itoa(n)
	sfd, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("opening %s: %w", name, err)
	}
	return master, os.NewFile(uintptr(sfd), name), nil
}
