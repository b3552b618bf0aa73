// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// auditdSpace is what auditd.conf says auditd does as its log's
// filesystem fills: below space_left it warns, below admin_space_left it
// acts (Debian and RHEL ship SUSPEND: it stops writing its log, and the
// kernel loses nothing, as auditd still reads every record).
type auditdSpace struct {
	spaceLeft, adminLeft     uint64 // bytes; 0 when unset
	spaceAction, adminAction string
	diskFullAction           string
}

// auditdSpaceOf reads the thresholds of auditd.conf lines for a log
// filesystem of total bytes (a threshold may be a percentage of it).
func auditdSpaceOf(conf []string, total uint64) auditdSpace {
	size := func(key, def string) uint64 {
		v := strings.TrimSpace(confValue(conf, key, def))
		if p, ok := strings.CutSuffix(v, "%"); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil {
				return 0
			}
			return uint64(f / 100 * float64(total))
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0
		}
		return n << 20 // megabytes
	}
	return auditdSpace{
		spaceLeft: size("space_left", "75"), adminLeft: size("admin_space_left", "50"),
		spaceAction:    strings.ToUpper(confValue(conf, "space_left_action", "SYSLOG")),
		adminAction:    strings.ToUpper(confValue(conf, "admin_space_left_action", "SUSPEND")),
		diskFullAction: strings.ToUpper(confValue(conf, "disk_full_action", "SUSPEND")),
	}
}

// freeSpace is what an unprivileged writer may still use on the
// filesystem of dir (auditd compares its thresholds with it), and its size.
func freeSpace(dir string) (free, total uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("reading free space of %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}

// diskState reads the free space of dir's filesystem against auditd.conf's
// thresholds. problem says why auditd would not write a log there now
// (below admin_space_left: auditd checks as it writes, so a run that
// starts there has auditd read every record and write none, which bench
// would see only as a missing marker a minute later); note says it is
// below space_left, where auditd only warns. Both are "" when all is well
// or the space cannot be read.
func diskState(conf []string, dir string) (problem, note string) {
	free, total, err := freeSpace(dir)
	if err != nil {
		return "", ""
	}
	sp := auditdSpaceOf(conf, total)
	if sp.adminLeft > 0 && free <= sp.adminLeft && sp.adminAction != "IGNORE" {
		problem = fmt.Sprintf("the log's filesystem (%s) has %s free, at or below auditd.conf's admin_space_left (%s, action %s): auditd stops writing its log there; free some space or give --log-dir on a roomier disk",
			dir, mib(free), mib(sp.adminLeft), sp.adminAction)
	}
	if sp.spaceLeft > 0 && free <= sp.spaceLeft {
		note = fmt.Sprintf("the log's filesystem had %s free, below auditd.conf's space_left (%s, action %s)", mib(free), mib(sp.spaceLeft), sp.spaceAction)
	}
	return problem, note
}

// diskProblem is diskState's problem.
func diskProblem(conf []string, dir string) string {
	p, _ := diskState(conf, dir)
	return p
}

func mib(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
