// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	libaudit "github.com/elastic/go-libaudit/v2"
	"github.com/elastic/go-libaudit/v2/rule"
	"github.com/elastic/go-libaudit/v2/rule/flags"
	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/audit"
	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/host"
)

// auditSettings are the kernel's audit settings bench may change (starting
// auditd, the audit floor sizing the backlog) and must give back.
type auditSettings = auditstate.Settings

// auditStatus is the kernel's audit status as bench uses it, read over
// netlink (go-libaudit), not from `auditctl -s`'s text.
type auditStatus struct {
	Enabled, Failure, PID, RateLimit, BacklogLimit, Lost, Backlog, BacklogWaitTime uint64
	// HasWaitTime: the kernel has backlog_wait_time (its feature bitmap
	// says so, as auditctl reads it).
	HasWaitTime bool
	// WaitActual is the kernel's running total of the time processes slept
	// on a full backlog, in jiffies.
	WaitActual uint64
}

// statusOf is bench's view of the status go-libaudit read.
func statusOf(st *libaudit.AuditStatus) auditStatus {
	return auditStatus{
		Enabled: uint64(st.Enabled), Failure: uint64(st.Failure), PID: uint64(st.PID), RateLimit: uint64(st.RateLimit),
		BacklogLimit: uint64(st.BacklogLimit), Lost: uint64(st.Lost), Backlog: uint64(st.Backlog),
		BacklogWaitTime: uint64(st.BacklogWaitTime),
		HasWaitTime:     libaudit.AuditFeatureBitmap(st.FeatureBitmap)&libaudit.AuditFeatureBitmapBacklogWaitTime != 0,
		WaitActual:      uint64(st.BacklogWaitTimeActual),
	}
}

// kernelAuditStatus reads the kernel's audit status.
func kernelAuditStatus() (auditStatus, error) {
	st, err := auditstate.Status()
	if err != nil {
		return auditStatus{}, err
	}
	return statusOf(st), nil
}

// readAuditSettings reads the node's own audit settings: the kernel's,
// except those running tracers changed, which are the values they
// recorded and will restore.
func readAuditSettings() (*auditSettings, error) {
	st, err := auditstate.Status()
	if err != nil {
		return nil, err
	}
	a := auditstate.SettingsOf(st)
	o := audit.TracerOriginals()
	for _, f := range []struct {
		dst *uint32
		src *uint32
	}{{&a.Enabled, o.Enabled}, {&a.BacklogLimit, o.BacklogLimit}, {&a.BacklogWaitTime, o.BacklogWaitTime}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return &a, nil
}

// restoreAuditSettings sets back what differs from want, the node's own
// settings (readAuditSettings), and says what it did.
func restoreAuditSettings(want *auditSettings) ([]string, error) {
	c, st, err := auditstate.OpenStatus()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if auditstate.Locked(st) {
		return nil, nil // locked since: nothing can be changed until reboot
	}
	done, err := want.Restore(c, st, auditstate.Failure, auditstate.RateLimit)
	errs := []error{err}
	// While a tracer runs, the settings tracers manage are theirs to give
	// back: setting them now would undo a running tracer's, so the values
	// found go to the last tracer to restore instead.
	orig := audit.Originals{Enabled: &want.Enabled, BacklogLimit: &want.BacklogLimit, BacklogWaitTime: &want.BacklogWaitTime}
	if want.Enabled == auditstate.EnabledLocked {
		orig.Enabled = nil
	}
	handed, err := audit.ReturnSettings(orig, func() error {
		d, err := want.Restore(c, st, auditstate.Recorded...)
		done = append(done, d...)
		return err
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("restoring audit settings: %w", err))
	}
	if handed {
		done = append(done, "left enabled, backlog_limit and backlog_wait_time to the running tracer to restore")
	}
	return done, errors.Join(errs...)
}

// auditQueued is the kernel's audit backlog now and its limit, 0 and 0
// when unreadable.
func auditQueued() (queued, limit int64) {
	st, err := auditstate.Status()
	if err != nil {
		return 0, 0
	}
	return int64(st.Backlog), int64(st.BacklogLimit)
}

// auditHolder returns the live process that holds the audit PID, or 0.
func auditHolder() (int, string) {
	st, err := auditstate.Status()
	if err != nil || st.PID == 0 {
		return 0, ""
	}
	pid := int(st.PID)
	comm, ok := host.ProcComm(uint32(pid))
	if !ok {
		return 0, "" // the kernel has not noticed yet that it died
	}
	return pid, comm
}

// nodeAuditd is the node's running auditd: what it takes to start it again
// as it was.
type nodeAuditd struct {
	PID int `json:"pid"`
	// Argv is its command line as /proc had it, to tell and to compare;
	// never written to the state file: what starts it again is Start.
	Argv []string `json:"-"`
	// Start names the way to start it again (auditdStarts), with the
	// options it had (-c, -n, -f, -l, -s), checked when they are read.
	Start   string        `json:"start"`
	Options auditdOptions `json:"options"`
	// Conf is its auditd.conf (-c DIR, or the default).
	Conf string `json:"conf"`
	// Cgroup is its cgroup v2 path, to start it again there.
	Cgroup string `json:"cgroup,omitempty"`
	// Foreground: started with -n or -f, so it does not daemonise.
	Foreground bool `json:"foreground,omitempty"`
	PPID       int  `json:"ppid"`
	// Rules are the audit rules loaded when bench found it (auditctl -l).
	Rules []string `json:"rules,omitempty"`
}

// findNodeAuditd returns the auditd that holds the audit PID, or nil.
func findNodeAuditd() (*nodeAuditd, error) {
	pid, comm := auditHolder()
	if pid == 0 || comm != "auditd" {
		return nil, nil
	}
	a := &nodeAuditd{PID: pid, Conf: "/etc/audit/auditd.conf", Argv: cmdline(pid)}
	if a.Argv == nil {
		return nil, fmt.Errorf("reading the command line of auditd (pid %d)", pid)
	}
	a.Start, a.Options = "auditd", parseAuditdOptions(a.Argv[1:])
	a.Foreground = a.Options.NoFork || a.Options.Stderr
	if a.Options.ConfDir != "" {
		a.Conf = filepath.Join(a.Options.ConfDir, "auditd.conf")
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if st, ok := host.ParseProcStat(b); ok {
			a.PPID = int(st.PPID)
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid)); err == nil {
		// Its v2 path where it has one (the v1 name=systemd path on a
		// v1-only node, where there is no v2 hierarchy to use it in).
		a.Cgroup, _ = host.ParseProcCgroup(b)
	}
	return a, nil
}

// cmdline is a process's argv, with its program as an absolute path.
func cmdline(pid int) []string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil
	}
	var argv []string
	for _, f := range bytes.Split(bytes.TrimRight(raw, "\x00"), []byte{0}) {
		argv = append(argv, string(f))
	}
	if len(argv) > 0 && !filepath.IsAbs(argv[0]) {
		if p, err := lookSbin(filepath.Base(argv[0])); err == nil {
			argv[0] = p
		}
	}
	return argv
}

// auditdOptions are auditd's command-line options (auditd(8)).
type auditdOptions struct {
	ConfDir string `json:"conf_dir,omitempty"`     // -c
	NoFork  bool   `json:"no_fork,omitempty"`      // -n
	Stderr  bool   `json:"stderr,omitempty"`       // -f
	Links   bool   `json:"follow_links,omitempty"` // -l
	State   string `json:"state,omitempty"`        // -s enable|disable|nochange
	// Unknown is the first argument that is none of these: such an auditd
	// is not started again by bench.
	Unknown string `json:"-"`
}

func parseAuditdOptions(args []string) auditdOptions {
	var o auditdOptions
	for i := 0; i < len(args); i++ {
		switch f := args[i]; {
		case f == "-n":
			o.NoFork = true
		case f == "-f":
			o.Stderr = true
		case f == "-l":
			o.Links = true
		case (f == "-c" || f == "-s") && i+1 < len(args):
			i++
			if f == "-c" {
				o.ConfDir = args[i]
			} else {
				o.State = args[i]
			}
		default:
			if o.Unknown == "" {
				o.Unknown = f
			}
		}
	}
	return o
}

// auditdStarts are the ways bench starts the node's auditd again, by the
// name the state file gives: what runs comes from this table and the
// checked options, never a command line read from a file.
var auditdStarts = map[string]func(o auditdOptions) ([]string, error){
	"auditd": func(o auditdOptions) ([]string, error) {
		bin, err := lookSbin("auditd")
		if err != nil {
			return nil, err
		}
		argv := []string{bin}
		if o.ConfDir != "" {
			if err := rootsDir(o.ConfDir); err != nil {
				return nil, err
			}
			argv = append(argv, "-c", o.ConfDir)
		}
		for _, f := range []struct {
			on   bool
			flag string
		}{{o.NoFork, "-n"}, {o.Stderr, "-f"}, {o.Links, "-l"}} {
			if f.on {
				argv = append(argv, f.flag)
			}
		}
		switch o.State {
		case "":
		case "enable", "disable", "nochange":
			argv = append(argv, "-s", o.State)
		default:
			return nil, fmt.Errorf("auditd -s %q is not a state auditd knows", o.State)
		}
		return argv, nil
	},
}

// rootsDir checks that dir (auditd's -c) is an absolute path to a
// directory of root's that no one else can write, reached through no
// symbolic link another user controls.
func rootsDir(dir string) error {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return fmt.Errorf("auditd -c %q is not a clean absolute path", dir)
	}
	fd, err := host.OpenDirNoFollow(dir)
	if err != nil {
		return fmt.Errorf("auditd -c %s: %w", dir, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("auditd -c %s: %w", dir, err)
	}
	if st.Uid != 0 || st.Mode&0o022 != 0 {
		return fmt.Errorf("auditd -c %s: the directory is not root's alone (uid %d, mode %04o)", dir, st.Uid, st.Mode&0o7777)
	}
	return nil
}

// argv is the command line that starts a again, from auditdStarts.
func (a *nodeAuditd) argv() ([]string, error) {
	start, ok := auditdStarts[a.Start]
	if !ok {
		return nil, fmt.Errorf("the state names %q, not a way tracer knows to start auditd", a.Start)
	}
	return start(a.Options)
}

// restartable says why bench cannot start this auditd again as it was, or "".
func (a *nodeAuditd) restartable() string {
	if a.Options.Unknown != "" {
		return fmt.Sprintf("auditd (pid %d) runs with %q, an option bench does not know how to start it again with", a.PID, a.Options.Unknown)
	}
	if a.Foreground && a.PPID != 1 {
		comm, _ := host.ProcComm(uint32(a.PPID))
		return fmt.Sprintf("auditd (pid %d) runs in the foreground under %s (pid %d), which would not see it come back",
			a.PID, comm, a.PPID)
	}
	if len(a.Argv) == 0 {
		return fmt.Sprintf("auditd (pid %d) has no readable command line", a.PID)
	}
	return ""
}

// stop ends the node's auditd and waits until it is gone and the kernel
// has let go of its PID.
func (a *nodeAuditd) stop() error {
	if err := syscall.Kill(a.PID, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stopping auditd (pid %d): %w", a.PID, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", a.PID))
		if os.IsNotExist(err) {
			if pid, _ := auditHolder(); pid != a.PID {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("auditd (pid %d) did not exit within 30s of SIGTERM", a.PID)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// start starts auditd again with its command line, environment of a
// service, in its cgroup, and waits until it holds the audit PID. It
// returns the new pid.
func (a *nodeAuditd) start() (int, error) {
	// An auditd bench started for a run may still be on its way out (it
	// was told by PDEATHSIG when bench was killed): wait for the PID.
	argv, err := a.argv()
	if err != nil {
		return 0, fmt.Errorf("cannot start the node's auditd again: %w", err)
	}
	if c := strings.TrimPrefix(a.Cgroup, "/"); c != "" && !filepath.IsLocal(c) {
		return 0, fmt.Errorf("cannot start the node's auditd again: cgroup %q is not a cgroup path", a.Cgroup)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		pid, comm := auditHolder()
		if pid == 0 {
			break
		}
		if comm == "auditd" && slices.Equal(cmdline(pid), argv) {
			return pid, nil // someone started it already
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("cannot start the node's auditd again: %s (pid %d) holds the audit PID", comm, pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + tracer.SafePath, "LANG=C"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if a.Cgroup != "" {
		if root := cgroupV2Mount(); root != "" {
			if fd, err := unix.Open(filepath.Join(root, a.Cgroup), unix.O_DIRECTORY|unix.O_PATH|unix.O_CLOEXEC, 0); err == nil {
				defer unix.Close(fd)
				cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
			}
		}
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting auditd again (%s): %w", strings.Join(argv, " "), err)
	}
	if a.Foreground {
		go func() { _ = cmd.Wait() }()
	} else {
		// It forks and its first process exits once the daemon is up.
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				return 0, fmt.Errorf("starting auditd again (%s): %w", strings.Join(argv, " "), err)
			}
		case <-time.After(30 * time.Second):
			return 0, fmt.Errorf("starting auditd again (%s): it did not daemonise within 30s", strings.Join(argv, " "))
		}
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		if pid, comm := auditHolder(); pid != 0 && comm == "auditd" {
			return pid, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("auditd (%s) did not take the audit PID within 30s", strings.Join(argv, " "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// listRules returns the loaded audit rules as auditctl -l prints them, or
// nil without auditctl.
func listRules() ([]string, error) {
	auditctl, err := lookSbin("auditctl")
	if err != nil {
		return nil, nil
	}
	out, err := exec.Command(auditctl, "-l").Output()
	if err != nil {
		return nil, fmt.Errorf("auditctl -l: %w", cmdErr(err))
	}
	var rules []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" && l != "No rules" {
			rules = append(rules, l)
		}
	}
	return rules, nil
}

// reloadRules adds back the rules of want that are not loaded: auditd's
// service loads the node's rules only when it starts from its init system.
func reloadRules(want []string) ([]string, error) {
	have, err := listRules()
	if err != nil || len(want) == 0 {
		return nil, err
	}
	// Only audit rules, each alone on its line: auditctl -R also takes
	// -e 2 (locked until reboot), -f 2 (panic) and -D.
	var missing, refused []string
	for _, r := range notTracers(want) {
		if !isAuditRule(r) {
			refused = append(refused, r)
			continue
		}
		if !slices.Contains(have, r) {
			missing = append(missing, r)
		}
	}
	if len(refused) > 0 {
		err = fmt.Errorf("not reloading %q: not an audit rule", refused)
	}
	if len(missing) == 0 {
		return nil, err
	}
	f, err := os.CreateTemp("", "tracer-bench-rules-")
	if err != nil {
		return nil, fmt.Errorf("writing rules to reload: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(strings.Join(missing, "\n") + "\n")
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("writing rules to reload: %w", err)
	}
	auditctl, _ := lookSbin("auditctl")
	if out, err := exec.Command(auditctl, "-R", f.Name()).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("reloading %d audit rules: %v: %s", len(missing), err, strings.TrimSpace(string(out)))
	}
	done := []string{fmt.Sprintf("reloaded %d audit rules", len(missing))}
	if len(refused) > 0 {
		return done, fmt.Errorf("not reloading %q: not an audit rule", refused)
	}
	return done, nil
}

// isAuditRule reports whether line is one audit rule (-a, -w) as
// go-libaudit reads them, and nothing else.
func isAuditRule(line string) bool {
	if strings.ContainsAny(line, "\n\r") {
		return false
	}
	r, err := flags.Parse(line)
	if err != nil {
		return false
	}
	switch r.(type) {
	case *rule.SyscallRule, *rule.FileWatchRule:
		return true
	}
	return false
}

// benchState is what a running bench changed on the node, on disk so that
// `tracer cleanup` can undo it after a SIGKILL.
type benchState struct {
	PID int `json:"pid"`
	// Start is the bench's start time (/proc/PID/stat field 22): with the
	// pid it tells the bench from a process that reused its pid.
	Start uint64 `json:"start_time,omitempty"`
	// Audit is the audit settings as bench found them.
	Audit *auditSettings `json:"audit,omitempty"`
	// StoppedAuditd is the node's auditd that --restart-auditd stopped.
	StoppedAuditd *nodeAuditd `json:"stopped_auditd,omitempty"`
	// IOEnabled lists the cgroup v2 controllers bench enabled in the root
	// cgroup's subtree_control for the simulated HDD.
	IOEnabled []string `json:"cgroup_controllers_enabled,omitempty"`
}

func statePath(pid int) string {
	return filepath.Join(auditstate.StateDir, "bench-"+strconv.Itoa(pid)+".json")
}

// write replaces the state file atomically, in a state directory only
// root can write (auditstate.OpenStateDir).
func (s *benchState) write() error {
	d, err := auditstate.OpenStateDir(auditstate.StateDir)
	if err != nil {
		return err
	}
	d.Close()
	if err := auditstate.WriteJSON(filepath.Base(statePath(s.PID)), s); err != nil {
		return fmt.Errorf("writing bench state file: %w", err)
	}
	return nil
}

func (s *benchState) remove() { _ = os.Remove(statePath(s.PID)) }

// undo puts back what s records and says what it did.
func (s *benchState) undo() ([]string, error) {
	var done []string
	var errs []error
	if a := s.StoppedAuditd; a != nil {
		pid, err := a.start()
		if err != nil {
			errs = append(errs, err)
		} else if pid != a.PID {
			done = append(done, fmt.Sprintf("started the node's auditd again (%s, pid %d)", strings.Join(cmdline(pid), " "), pid))
		}
		d, err := reloadRules(a.Rules)
		done, errs = append(done, d...), append(errs, err)
	}
	if s.Audit != nil {
		d, err := restoreAuditSettings(s.Audit)
		done, errs = append(done, d...), append(errs, err)
	}
	if len(s.IOEnabled) > 0 {
		if root := cgroupV2Mount(); root != "" {
			removeStaleCgroups(root)
			d, err := disableControllers(root, s.IOEnabled)
			done, errs = append(done, d...), append(errs, err)
		}
	}
	return done, errors.Join(errs...)
}

// Cleanup undoes what benches killed with SIGKILL left on the node: audit
// settings, a stopped auditd, a simulated disk, cgroups. It returns what it
// did. Benches still running are left alone.
//
// What only the host can undo (starting its auditd, its root cgroup's
// controllers) is left, with the state file, when cleanup runs in a
// container: there it would start auditd from the container's files, or
// change the container's cgroup.
func Cleanup() ([]string, error) {
	d, err := auditstate.OpenStateDir(auditstate.StateDir)
	if err != nil {
		return nil, err
	}
	d.Close()
	files, _ := filepath.Glob(filepath.Join(auditstate.StateDir, "bench-*.json"))
	var done []string
	var errs []error
	host, container := hostNamespaces()
	for _, f := range files {
		var s benchState
		b, err := auditstate.ReadStateFile(auditstate.StateDir, filepath.Base(f))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if json.Unmarshal(b, &s) != nil || s.PID == 0 {
			continue
		}
		if s.PID != os.Getpid() && s.running() {
			continue // still running: it puts back its own
		}
		if !host && (s.StoppedAuditd != nil || len(s.IOEnabled) > 0) {
			done = append(done, fmt.Sprintf("left what killed bench pid %d changed on the host (the node's auditd, cgroup controllers) to tracer cleanup on the host: this runs in a container (%s)", s.PID, container))
			continue
		}
		d, err := s.undo()
		for _, x := range d {
			done = append(done, x+fmt.Sprintf(" (left by killed bench pid %d)", s.PID))
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		_ = os.Remove(f)
	}
	removeStale()
	if root := cgroupV2Mount(); root != "" {
		removeStaleCgroups(root)
	}
	return done, errors.Join(errs...)
}

// hostNamespaces reports whether this process runs in the host's pid,
// mount and cgroup namespaces, and if not, which differs.
func hostNamespaces() (bool, string) {
	// The initial pid and cgroup namespaces have fixed inode numbers
	// (PROC_PID_INIT_INO, PROC_CGROUP_INIT_INO); the mount namespace is
	// the host's when it is pid 1's, in the host's pid namespace (where
	// pid 1's can be looked at).
	ino := func(p string) uint64 {
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil {
			return 0
		}
		return st.Ino
	}
	switch {
	case ino("/proc/self/ns/pid") != 0xEFFFFFFC:
		return false, "pid namespace"
	case ino("/proc/self/ns/cgroup") != 0 && ino("/proc/self/ns/cgroup") != 0xEFFFFFFB:
		return false, "cgroup namespace"
	case ino("/proc/1/ns/mnt") != 0 && ino("/proc/self/ns/mnt") != ino("/proc/1/ns/mnt"):
		return false, "mount namespace"
	}
	return true, ""
}

// newBenchState is the state of this bench, named by its pid and start.
func newBenchState() *benchState {
	return &benchState{PID: os.Getpid(), Start: processStart(os.Getpid())}
}

// processStart is pid's start time, 0 when it is gone.
func processStart(pid int) uint64 {
	st, err := host.ReadProcStat(uint32(pid))
	if err != nil {
		return 0
	}
	return st.Start
}

// running reports whether the bench that wrote s still runs: its pid is
// alive with the start time it recorded. A name says nothing (any user
// can name a process tracer-x, and pids are reused). A state file of a
// bench that recorded no start time falls back to the name.
func (s *benchState) running() bool {
	if !tracer.ProcessAlive(s.PID) {
		return false
	}
	if s.Start == 0 {
		return isTracer(s.PID)
	}
	return processStart(s.PID) == s.Start
}

func isTracer(pid int) bool {
	comm, ok := host.ProcComm(uint32(pid))
	return ok && strings.HasPrefix(comm, "tracer")
}

// nodeOwnRules lists the loaded audit rules that are the node's own.
func nodeOwnRules() ([]string, error) {
	rules, err := listRules()
	return notTracers(rules), err
}

// notTracers leaves out running tracers' rules and lean-records excludes:
// they are not the node's, and their tracer removes them.
func notTracers(rules []string) []string {
	excl := audit.TracerOriginals().Excludes
	var out []string
	for _, r := range rules {
		if !audit.HasKey(r) && !slices.Contains(excl, r) {
			out = append(out, r)
		}
	}
	return out
}

// procsWith lists the processes whose command line holds s (a run's
// directory), whatever their name.
func procsWith(s string) []int {
	var out []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), s) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil && pid != os.Getpid() {
			out = append(out, pid)
		}
	}
	return out
}

// auditdsWith lists the auditd processes started with config dir.
func auditdsWith(dir string) []int {
	var out []int
	for _, pid := range procsWith(dir) {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && strings.Contains(string(b), "auditd\x00") {
			out = append(out, pid)
		}
	}
	return out
}
