//go:build linux

package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer"
)

const (
	auditdConf  = "/etc/audit/auditd.conf"
	auditdRules = "/etc/audit/audit.rules"
)

// auditdMode is the node's auditd with tracer's minimal rules. When auditd
// is not running, every run starts it (with the node's auditd.conf, its
// log_file moved to the run's storage and, for auditd-sync and auditd-data,
// another flush mode), loads the settings the node's audit.rules give (-b,
// --backlog_wait_time, -f, -r; never -D or -e), adds the rules, and after
// the workload removes them, lets auditd drain, stops it and restores the
// kernel's audit settings. An auditd that was already running is used as
// it is: only our rules are added and removed again.
type auditdMode struct {
	name  string
	flush string // "" as configured, INCREMENTAL, SYNC, DATA
	self  string

	auditd, auditctl string
	external         int // pid of an auditd that ran before bench, else 0
	externalLog      string
	rules            [][]string
	settings         [][]string
	saved            auditStatus
	conf             []string

	// per run
	w         *watcher
	cpu       cpuMeter
	kauditd   cpuMeter
	lost0     uint64
	wait0     uint64
	logFile   string
	logOffset int64
	rulesIn   int
	flushDesc string
}

// NewAuditdMode returns mode auditd (flush as the node configured it),
// auditd-incremental, auditd-sync or auditd-data.
func NewAuditdMode(name, self string) (Mode, error) {
	m := &auditdMode{name: name, self: self}
	switch name {
	case "auditd":
	case "auditd-incremental":
		m.flush = "INCREMENTAL"
	case "auditd-sync":
		m.flush = "SYNC"
	case "auditd-data":
		m.flush = "DATA"
	default:
		return nil, fmt.Errorf("not an auditd mode: %q", name)
	}
	return m, nil
}

func (m *auditdMode) Name() string    { return m.name }
func (m *auditdMode) WritesLog() bool { return true }

func lookSbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

func (m *auditdMode) Setup(ctx context.Context) error {
	var err error
	if m.auditd, err = lookSbin("auditd"); err != nil {
		return Skipf("auditd is not installed: apt-get install auditd (Debian, Ubuntu) or dnf install audit (RHEL)")
	}
	if m.auditctl, err = lookSbin("auditctl"); err != nil {
		return Skipf("auditctl is not installed: apt-get install auditd (Debian, Ubuntu) or dnf install audit (RHEL)")
	}
	if m.saved, err = m.status(); err != nil {
		return err
	}
	if m.saved.Enabled == 2 {
		return Skipf("audit is locked (enabled 2): rules cannot be added until reboot")
	}
	if pid := int(m.saved.PID); pid != 0 {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if strings.TrimSpace(string(comm)) != "auditd" {
			return fmt.Errorf("the audit daemon slot is held by process %d (%s): stop it first", pid, strings.TrimSpace(string(comm)))
		}
		if m.flush != "" {
			return Skipf("auditd already runs (pid %d): bench does not change its flush mode; stop auditd to measure %s", pid, m.name)
		}
		m.external = pid
	}
	out, err := exec.CommandContext(ctx, m.self, "rules", "--events", "exec,fork,signal").Output()
	if err != nil {
		return fmt.Errorf("getting rules from tracer rules: %w", cmdErr(err))
	}
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			m.rules = append(m.rules, strings.Fields(l))
		}
	}
	if len(m.rules) == 0 {
		return fmt.Errorf("tracer rules printed no rules")
	}
	if b, err := os.ReadFile(auditdRules); err == nil {
		m.settings = ruleSettings(string(b))
	}
	if b, err := os.ReadFile(auditdConf); err == nil {
		m.conf = strings.Split(string(b), "\n")
	}
	if m.external != 0 {
		m.externalLog = confValue(m.conf, "log_file", "/var/log/audit/audit.log")
	}
	return nil
}

// ruleSettings picks the settings lines of an audit.rules file that the
// node's auditd service loads at start: -b, --backlog_wait_time, -f, -r.
// -D (delete all rules) and -e (enable, lock) are left out on purpose.
func ruleSettings(text string) [][]string {
	var out [][]string
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) == 2 {
			switch f[0] {
			case "-b", "--backlog_wait_time", "-f", "-r":
				out = append(out, f)
			}
		}
	}
	return out
}

// confValue returns the value of key in auditd.conf lines, or def.
func confValue(conf []string, key, def string) string {
	for _, l := range conf {
		k, v, ok := strings.Cut(l, "=")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return def
}

// withConf returns conf with each key in set replaced (or appended).
func withConf(conf []string, set map[string]string, order []string) string {
	done := map[string]bool{}
	var b strings.Builder
	for _, l := range conf {
		k, _, ok := strings.Cut(l, "=")
		k = strings.TrimSpace(k)
		if v, replace := set[k]; ok && replace && !strings.HasPrefix(k, "#") {
			fmt.Fprintf(&b, "%s = %s\n", k, v)
			done[k] = true
			continue
		}
		if l != "" {
			b.WriteString(l + "\n")
		}
	}
	for _, k := range order {
		if !done[k] {
			fmt.Fprintf(&b, "%s = %s\n", k, set[k])
		}
	}
	return b.String()
}

func (m *auditdMode) Start(ctx context.Context, run *Run) (err error) {
	defer func() {
		if err != nil {
			m.cleanupRun()
		}
	}()
	flush := confValue(m.conf, "flush", "INCREMENTAL_ASYNC")
	freq := confValue(m.conf, "freq", "50")
	if m.external == 0 {
		m.logFile = filepath.Join(run.Dir, "audit.log")
		conf := filepath.Join(run.Dir, "conf")
		if err := os.Mkdir(conf, 0o750); err != nil {
			return fmt.Errorf("making auditd config directory: %w", err)
		}
		set := map[string]string{
			"log_file": m.logFile,
			// One run's records stay in one file to be counted.
			"max_log_file_action": "IGNORE",
		}
		order := []string{"log_file", "max_log_file_action"}
		if m.flush != "" {
			flush = m.flush
			set["flush"] = m.flush
			order = append(order, "flush")
		}
		if err := os.WriteFile(filepath.Join(conf, "auditd.conf"), []byte(withConf(m.conf, set, order)), 0o640); err != nil {
			return fmt.Errorf("writing auditd.conf: %w", err)
		}
		// -n: no fork, so bench is its parent and reads its rusage.
		w, err := startWatcher(ctx, "auditd", exec.Command(m.auditd, "-n", "-c", conf), false, "", 0)
		if err != nil {
			return err
		}
		m.w = w
		if err := m.waitDaemon(ctx, w); err != nil {
			return err
		}
		for _, set := range m.settings {
			if err := m.ctl(ctx, set...); err != nil {
				return err
			}
		}
		m.flushDesc = "flush=" + flush
		if strings.HasPrefix(flush, "INCREMENTAL") {
			m.flushDesc += " freq=" + freq
		}
		return m.addRules(ctx)
	}
	m.logFile = m.externalLog
	if st, err := os.Stat(m.logFile); err == nil {
		m.logOffset = st.Size()
	}
	m.flushDesc = "flush=" + flush
	return m.addRules(ctx)
}

func (m *auditdMode) addRules(ctx context.Context) error {
	st, err := m.status()
	if err != nil {
		return err
	}
	m.lost0, m.wait0 = st.Lost, st.WaitActual
	for _, r := range m.rules {
		if err := m.ctl(ctx, r...); err != nil {
			return err
		}
		m.rulesIn++
	}
	pid := m.external
	if m.w != nil {
		pid = m.w.pid()
	}
	m.cpu = startCPU(pid)
	m.kauditd = startCPU(findKthread("kauditd"))
	return nil
}

// waitDaemon waits until the kernel knows auditd as its audit daemon.
func (m *auditdMode) waitDaemon(ctx context.Context, w *watcher) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := m.status()
		if err != nil {
			return err
		}
		if int(st.PID) == w.pid() {
			return nil
		}
		if w.exited() {
			return fmt.Errorf("auditd exited at start: %s", w.output())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("auditd did not register with the kernel within 30s: %s", w.output())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (m *auditdMode) Stop(ctx context.Context, run *Run) (Observation, error) {
	obs := Observation{Seen: -1, Note: m.flushDesc}
	// The workload is done, but its records may still wait in the kernel's
	// backlog or in auditd's own queue. A marker event goes after them:
	// kill(bench, 0), which our rules log. Records leave both queues in
	// order, so once the marker is in the log, all of the run's records are.
	marker := os.Getpid()
	markErr := syscall.Kill(marker, 0)
	if err := m.removeRules(ctx); err != nil {
		m.cleanupRun()
		return obs, err
	}
	if markErr != nil {
		m.cleanupRun()
		return obs, fmt.Errorf("sending the marker event: %w", markErr)
	}
	if err := m.drain(ctx, marker); err != nil {
		m.cleanupRun()
		return obs, err
	}
	st, err := m.status()
	if err == nil {
		obs.Lost = int64(uint32(st.Lost - m.lost0)) // the kernel counter is 32 bits and wraps
		obs.BacklogWait = backlogWait(m.wait0, st.WaitActual)
	}
	obs.KauditdCPU = m.kauditd.Since()
	if m.w != nil {
		w := m.w
		m.w = nil
		total, err := w.stop(syscall.SIGTERM, 20*time.Second)
		if m.cpu.ok {
			obs.TracerCPU = max(total-m.cpu.start, 0)
		}
		if rerr := m.restore(); err == nil {
			err = rerr
		}
		if err != nil {
			return obs, err
		}
	} else {
		obs.TracerCPU = m.cpu.Since()
	}
	evs, err := m.readLog()
	if err != nil {
		return obs, err
	}
	c := countTree(evs, uint32(run.RootPID), run.Threads)
	obs.Seen = c.Total()
	obs.Note = joinNote(obs.Note, countNote(run.Workload, c))
	return obs, nil
}

func (m *auditdMode) readLog() ([]procEvent, error) {
	f, err := os.Open(m.logFile)
	if err != nil {
		return nil, fmt.Errorf("opening auditd log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading auditd log: %w", err)
	}
	if st.Size() < m.logOffset {
		return nil, fmt.Errorf("auditd log %s was rotated during the run: events cannot be counted", m.logFile)
	}
	return readAuditLog(io.NewSectionReader(f, m.logOffset, st.Size()-m.logOffset), auditrules.Key)
}

// drain waits until the marker event (kill(marker, 0)) is in auditd's
// log: then every record before it is written. It gives up when auditd
// died, or when nothing moved (empty backlog, log unchanged) for a minute:
// the marker was lost.
func (m *auditdMode) drain(ctx context.Context, marker int) error {
	f, err := os.Open(m.logFile)
	if err != nil {
		return fmt.Errorf("opening auditd log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(m.logOffset, io.SeekStart); err != nil {
		return fmt.Errorf("reading auditd log: %w", err)
	}
	r := bufio.NewReaderSize(f, 1<<20)
	var partial []byte
	start, lastMove := time.Now(), time.Now()
	var read int64
	for {
		for {
			chunk, err := r.ReadSlice('\n')
			if len(chunk) > 0 {
				lastMove = time.Now()
				read += int64(len(chunk))
			}
			if err == bufio.ErrBufferFull {
				partial = append(partial, chunk...)
				continue
			}
			if err != nil { // io.EOF: a line still being written stays partial
				partial = append(partial, chunk...)
				break
			}
			line := chunk
			if len(partial) > 0 {
				line = append(partial, chunk...)
				partial = partial[:0]
			}
			if isMarker(line, marker) {
				return nil
			}
		}
		if m.w != nil && m.w.exited() {
			return fmt.Errorf("auditd exited before it wrote all records: %s", m.w.output())
		}
		if st, err := m.status(); err == nil && st.Backlog > 0 {
			lastMove = time.Now()
		}
		if time.Since(lastMove) > time.Minute {
			return fmt.Errorf("auditd's log did not get the marker record: records were lost")
		}
		select {
		case <-ctx.Done():
			// Its queue grows faster than it writes: the node makes more
			// records than this flush mode and disk can take.
			return fmt.Errorf("auditd had not written the run's records %s after the workload ended (it wrote %.0f KiB/s of log meanwhile, %s): %w",
				time.Since(start).Round(time.Second), float64(read)/1024/time.Since(start).Seconds(), m.flushDesc, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// isMarker tells the record of kill(marker, 0).
func isMarker(line []byte, marker int) bool {
	s := string(line)
	if !strings.HasPrefix(s, "type=SYSCALL ") || !strings.Contains(s, " a1=0 ") ||
		!strings.Contains(s, " pid="+strconv.Itoa(marker)+" ") {
		return false
	}
	if i := strings.IndexByte(s, 0x1d); i >= 0 {
		s = s[:i]
	}
	e, ok := parseAuditSyscall(s)
	return ok && e.Type == tracer.TypeSignal
}

func (m *auditdMode) removeRules(ctx context.Context) error {
	var first error
	for ; m.rulesIn > 0; m.rulesIn-- {
		r := append([]string(nil), m.rules[m.rulesIn-1]...)
		if r[0] == "-a" || r[0] == "-A" {
			r[0] = "-d"
		}
		if err := m.ctl(ctx, r...); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// restore puts back the kernel's audit settings as bench found them:
// starting auditd enables audit and its audit.rules settings change the
// backlog.
func (m *auditdMode) restore() error {
	ctx := context.Background()
	s := m.saved
	var errs []error
	set := func(args ...string) {
		if err := m.ctl(ctx, args...); err != nil {
			errs = append(errs, err)
		}
	}
	set("-b", strconv.FormatUint(s.BacklogLimit, 10))
	set("-f", strconv.FormatUint(s.Failure, 10))
	set("-r", strconv.FormatUint(s.RateLimit, 10))
	if s.HasWaitTime {
		set("--backlog_wait_time", strconv.FormatUint(s.BacklogWaitTime, 10))
	}
	set("-e", strconv.FormatUint(s.Enabled, 10))
	return errors.Join(errs...)
}

// cleanupRun undoes what a run installed after a failure: rules, the
// daemon, the settings.
func (m *auditdMode) cleanupRun() {
	_ = m.removeRules(context.Background())
	if m.w != nil {
		_, _ = m.w.stop(syscall.SIGTERM, 20*time.Second)
		m.w = nil
		_ = m.restore()
	}
}

func (m *auditdMode) Teardown() error {
	m.cleanupRun()
	return nil
}

func (m *auditdMode) ctl(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, m.auditctl, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("auditctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// backlogWait is how long processes slept on a full audit backlog between
// two readings of the kernel's total: where a workload's time goes when the
// consumer is slower than the kernel makes records.
func backlogWait(before, after uint64) float64 {
	if after <= before {
		return 0
	}
	return float64(after - before)
}

// auditStatus is what `auditctl -s` prints.
type auditStatus struct {
	Enabled, Failure, PID, RateLimit, BacklogLimit, Lost, Backlog, BacklogWaitTime uint64
	HasWaitTime                                                                    bool
	// WaitActual is the kernel's running total of the time processes slept
	// on a full backlog, in jiffies.
	WaitActual uint64
}

func (m *auditdMode) status() (auditStatus, error) { return auditctlStatus(m.auditctl) }

func auditctlStatus(auditctl string) (auditStatus, error) {
	out, err := exec.Command(auditctl, "-s").Output()
	if err != nil {
		return auditStatus{}, fmt.Errorf("auditctl -s: %w", cmdErr(err))
	}
	return parseAuditStatus(string(out)), nil
}

func parseAuditStatus(text string) auditStatus {
	var s auditStatus
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "enabled":
			s.Enabled = v
		case "failure":
			s.Failure = v
		case "pid":
			s.PID = v
		case "rate_limit":
			s.RateLimit = v
		case "backlog_limit":
			s.BacklogLimit = v
		case "lost":
			s.Lost = v
		case "backlog":
			s.Backlog = v
		case "backlog_wait_time":
			s.BacklogWaitTime, s.HasWaitTime = v, true
		case "backlog_wait_time_actual":
			s.WaitActual = v
		}
	}
	return s
}
