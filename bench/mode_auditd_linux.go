// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/auparse"
	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

const (
	auditdConf  = "/etc/audit/auditd.conf"
	auditdRules = "/etc/audit/audit.rules"
)

// auditdMode is auditd with tracer's minimal rules. When auditd is not
// running, every run starts it (with the node's auditd.conf, its log_file
// moved to the run's storage and, for auditd-sync and auditd-data, another
// flush mode), loads the settings the node's audit.rules give (-b,
// --backlog_wait_time, -f, -r; never -D or -e), adds the rules, and after
// the workload removes them, lets auditd drain, stops it and restores the
// kernel's audit settings. The node's own running auditd is measured as it
// is -- its config, its log, its other rules -- and labelled so: only our
// rules are added and removed again (`tracer bench --restart-auditd` stops
// it for the bench instead, and starts it again after).
type auditdMode struct {
	name  string
	flush string // "" as configured, INCREMENTAL, SYNC, DATA
	self  string
	// plugin is "" or laurel: the audit dispatcher's one plugin.
	plugin     string
	laurel     string   // laurel's path
	laurelConf []string // the node's laurel config, lines
	// events are the classes its rules record: exec, fork and signal
	// (those bench counts) unless set; the fidelity test adds exit.
	events string

	auditd, auditctl string
	external         *nodeAuditd // the node's running auditd, else nil
	externalLog      string
	writesLogs       bool
	rules            [][]string
	settings         [][]string
	saved            auditStatus
	// found are the node's own settings when Setup ran, put back after
	// each run (restoreAuditSettings).
	found *auditSettings
	conf  []string

	// per run
	runDir  string
	w       *watcher
	cpu     cpuMeter
	kauditd cpuMeter
	lost0   uint64
	wait0   uint64
	logFile string
	log     *logFollower
	// parse reads a line of the log the events are counted from: auditd's,
	// or laurel's JSON.
	parse     func([]byte) (auparse.Syscall, string, bool)
	pluginCPU map[int]float64 // CPU of auditd's descendants when the rules went in
	rulesIn   int
	flushDesc string
}

// The programs the auditd modes run.
var (
	toolAuditd   = tool{names: []string{"auditd"}, deb: "auditd", install: "apt-get install auditd (Debian, Ubuntu) or dnf install audit (RHEL)"}
	toolAuditctl = tool{names: []string{"auditctl"}, deb: "auditd", install: "apt-get install auditd (Debian, Ubuntu) or dnf install audit (RHEL)"}
	toolLaurel   = tool{names: []string{"laurel"}, deb: "laurel", install: "apt-get install laurel (Debian 12 and later, Ubuntu) or dnf install laurel (RHEL, from EPEL)"}
)

func init() {
	for i, m := range []struct{ name, flush, color, watches string }{
		{"auditd", "", "#c0392b", "the node's auditd with the rules `tracer rules` prints, flush mode as the node's `auditd.conf` says (Debian 12: `INCREMENTAL_ASYNC`, freq 50)"},
		{"auditd-incremental", "INCREMENTAL", "", "the same as `auditd` with `flush = INCREMENTAL`"},
		{"auditd-sync", "SYNC", "#8e2418", "the same as `auditd` with `flush = SYNC`"},
		{"auditd-data", "DATA", "#d4634f", "the same as `auditd` with `flush = DATA`"},
	} {
		registerMode(modeSpec{name: m.name, rank: 60 + i, inDefault: i == 0, inQuick: i == 0, peer: true,
			floor: "audit-floor-classic", audit: true, nodeAuditd: true, counterpart: "audit", color: m.color,
			watches: m.watches, countedFrom: "SYSCALL records with key `tracer` in auditd's log",
			needs: needs{root: true, tools: []tool{toolAuditd, toolAuditctl}},
			make: func(env modeEnv) (Mode, error) {
				return &auditdMode{name: m.name, flush: m.flush, self: env.self}, nil
			}})
	}
	registerMode(modeSpec{name: "laurel", rank: 65, inDefault: true, inQuick: true, peer: true,
		floor: "audit-floor-classic", audit: true, privateAuditd: true, counterpart: "audit", color: "#a0522d",
		watches: "auditd as the node configures it, with [laurel](https://github.com/threathunters-io/laurel) as its one audit plugin " +
			"(its plugin directory a private one, the node's `/etc/laurel/config.toml`, its log moved to the run's directory); the same rules as `auditd`",
		countedFrom: "SYSCALL records with key `tracer` in laurel's JSON log",
		needs:       needs{root: true, tools: []tool{toolAuditd, toolAuditctl, toolLaurel}},
		make: func(env modeEnv) (Mode, error) {
			return &auditdMode{name: "laurel", plugin: "laurel", self: env.self}, nil
		}})
}

func (m *auditdMode) Name() string    { return m.name }
func (m *auditdMode) WritesLog() bool { return true }

func (m *auditdMode) Setup(ctx context.Context) error {
	paths, err := findTools(m.name)
	if err != nil {
		return err
	}
	m.auditd, m.auditctl, m.laurel = paths["auditd"], paths["auditctl"], paths["laurel"]
	if m.plugin == "laurel" {
		// The packaged config, as an operator runs laurel; bench moves its
		// log and leaves the rest.
		if b, err := os.ReadFile(laurelNodeConf); err == nil {
			m.laurelConf = strings.Split(string(b), "\n")
		}
	}
	if m.saved, err = m.status(); err != nil {
		return err
	}
	if m.saved.Enabled == auditstate.EnabledLocked {
		return Skipf("%v", auditstate.ErrLocked)
	}
	if m.found, err = readAuditSettings(); err != nil {
		return err
	}
	confPath := auditdConf
	if pid, comm := auditHolder(); pid != 0 {
		if comm != "auditd" {
			return fmt.Errorf("the audit daemon slot is held by process %d (%s): stop it first", pid, comm)
		}
		if m.flush != "" {
			return Skipf("the node's auditd runs (pid %d): bench does not change its flush mode; give --restart-auditd to measure %s with a private auditd", pid, m.name)
		}
		if m.plugin != "" {
			return Skipf("the node's auditd runs (pid %d): bench does not change its plugins; give --restart-auditd to measure %s with a private auditd", pid, m.name)
		}
		if m.external, err = findNodeAuditd(); err != nil {
			return err
		}
		if m.external == nil {
			return fmt.Errorf("auditd (pid %d) stopped while bench looked at it", pid)
		}
		confPath = m.external.Conf
	}
	if m.rules, err = auditdRuleArgs(m.events); err != nil {
		return err
	}
	if b, err := os.ReadFile(auditdRules); err == nil {
		m.settings = ruleSettings(string(b))
	}
	if b, err := os.ReadFile(confPath); err == nil {
		m.conf = strings.Split(string(b), "\n")
	}
	if m.external != nil {
		m.externalLog = confValue(m.conf, "log_file", "/var/log/audit/audit.log")
		m.writesLogs = !strings.EqualFold(confValue(m.conf, "write_logs", "yes"), "no") &&
			!strings.EqualFold(confValue(m.conf, "log_format", "RAW"), "NOLOG")
	}
	return nil
}

// auditdRuleArgs are the rules `tracer rules --signal all` prints (for
// events, "" for exec, fork, signal; b32 copies when a 32-bit process
// runs), built by auditrules as that command builds them, as auditctl
// arguments.
func auditdRuleArgs(events string) ([][]string, error) {
	if events == "" {
		events = "exec,fork,signal"
	}
	types, err := vocab.ParseTypes(events)
	if err != nil {
		return nil, fmt.Errorf("building the audit rules: %w", err)
	}
	// Every signal, 0 too: the rules that leave existence checks out in
	// the kernel would leave out the drain's marker, kill(bench, 0).
	sigs, err := vocab.ParseSignals("all")
	if err != nil {
		return nil, fmt.Errorf("building the audit rules: %w", err)
	}
	set, err := auditrules.Build(auditrules.Options{Arch: "auto", Types: types, Signals: sigs, ScopeAUID: vocab.UnsetID, Has32Bit: host.Running32Bit})
	if err != nil {
		return nil, fmt.Errorf("building the audit rules: %w", err)
	}
	var out [][]string
	for _, r := range set.Rules {
		out = append(out, strings.Fields(r.Text()))
	}
	if len(out) == 0 {
		return nil, errors.New("no audit rules for exec, fork and signal")
	}
	return out, nil
}

// label is how results name the mode: the node's own auditd is not the
// one bench starts with only our rules.
func (m *auditdMode) label() string {
	if m.external != nil {
		return m.name + " (node's)"
	}
	return ""
}

// externalNote describes the node's auditd as bench found it.
func (m *auditdMode) externalNote() string {
	a := m.external
	other := 0
	if rules, err := listRules(); err == nil {
		for _, r := range rules {
			if !strings.Contains(r, "key="+auditrules.Key) {
				other++
			}
		}
	}
	note := fmt.Sprintf("the node's auditd as it runs (pid %d, %s, log_format=%s, backlog_limit %d, %d rules of its own, log %s)",
		a.PID, m.flushDesc, confValue(m.conf, "log_format", "RAW"), m.saved.BacklogLimit, other, m.externalLog)
	if !m.writesLogs {
		note += "; it writes no log: events not counted"
	}
	return note
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
	m.runDir = run.Dir
	flush := confValue(m.conf, "flush", "INCREMENTAL_ASYNC")
	freq := confValue(m.conf, "freq", "50")
	if m.external == nil {
		m.logFile = filepath.Join(run.Dir, "audit.log")
		conf := filepath.Join(run.Dir, "conf")
		if err := os.Mkdir(conf, 0o750); err != nil {
			return fmt.Errorf("making auditd config directory: %w", err)
		}
		// The plugins are bench's, never the node's: installing laurel
		// activates it in /etc/audit/plugins.d.
		plugins := filepath.Join(conf, "plugins.d")
		if err := os.Mkdir(plugins, 0o750); err != nil {
			return fmt.Errorf("making auditd plugin directory: %w", err)
		}
		set := map[string]string{
			"log_file": m.logFile,
			// One run's records stay in one file to be counted.
			"max_log_file_action": "IGNORE",
			"plugin_dir":          plugins,
		}
		order := []string{"log_file", "max_log_file_action", "plugin_dir"}
		m.parse = auditLogSyscall
		countFrom := m.logFile
		if m.plugin == "laurel" {
			if countFrom, err = m.writeLaurelConf(run.Dir, plugins); err != nil {
				return err
			}
			m.parse = laurelSyscall
		}
		if m.flush != "" {
			flush = m.flush
			set["flush"] = m.flush
			order = append(order, "flush")
		}
		if p := diskProblem(m.conf, filepath.Dir(run.Dir)); p != "" {
			return errors.New(p)
		}
		if err := os.WriteFile(filepath.Join(conf, "auditd.conf"), []byte(withConf(m.conf, set, order)), 0o640); err != nil {
			return fmt.Errorf("writing auditd.conf: %w", err)
		}
		// The last run's auditd has exited, but the kernel lets go of its
		// audit PID only when it next writes to it: a new auditd that
		// asks for the PID before then is refused and exits.
		if err := waitAuditPIDFree(ctx, 5*time.Second); err != nil {
			return err
		}
		// -n: no fork, so bench is its parent and reads its rusage.
		cmd := exec.Command(m.auditd, "-n", "-c", conf)
		inCgroup(cmd, run.LogCgroup)
		w, err := startWatcher(ctx, "auditd", cmd, false, "", 0)
		if err != nil {
			return err
		}
		m.w = w
		if err := m.waitDaemon(ctx, w); err != nil {
			return err
		}
		if err := m.waitFile(ctx, w, countFrom); err != nil {
			return err
		}
		if m.log, err = followLog(countFrom, false); err != nil {
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
	m.parse = auditLogSyscall
	m.flushDesc = "flush=" + flush
	if strings.HasPrefix(flush, "INCREMENTAL") {
		m.flushDesc += " freq=" + freq
	}
	if m.writesLogs {
		if p := diskProblem(m.conf, filepath.Dir(m.logFile)); p != "" {
			return errors.New(p)
		}
		// From its end as it is now; the follower keeps every file auditd
		// rotates to open, so that a busy run's records are all read.
		var err error
		if m.log, err = followLog(m.logFile, true); err != nil {
			return err
		}
	}
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
	pid := 0
	if m.external != nil {
		pid = m.external.PID
	}
	if m.w != nil {
		pid = m.w.pid()
	}
	m.cpu = startCPU(pid)
	m.kauditd = startCPU(findKthread("kauditd"))
	if m.plugin != "" && m.w != nil {
		m.pluginCPU = descendantsCPU(pid)
	}
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
			holder := "no process"
			if pid, comm := auditHolder(); pid != 0 {
				holder = fmt.Sprintf("process %d (%s)", pid, comm)
			}
			return fmt.Errorf("auditd exited at start (%v; the audit PID is held by %s): %s", w.exitOK, holder, w.output())
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
	obs := Observation{Seen: -1, Note: m.flushDesc, Label: m.label()}
	obs.Queued, obs.QueueLimit = auditQueued()
	if m.external != nil {
		obs.Note = m.externalNote()
	}
	// The workload is done, but its records may still wait in the kernel's
	// backlog or in auditd's own queue. A marker event goes after them:
	// kill(bench, 0), which our rules log. Records leave both queues in
	// order, so once the marker is in the log, all of the run's records are.
	// The rules stay until then, so that a marker the kernel dropped (a full
	// backlog with no wait time) can be sent again.
	marker := os.Getpid()
	if err := syscall.Kill(marker, 0); err != nil {
		m.cleanupRun()
		return obs, fmt.Errorf("sending the marker event: %w", err)
	}
	var evs []procEvent
	var err error
	if m.log != nil {
		evs, err = m.drain(ctx, run.Interrupted, marker)
	} else {
		err = m.waitBacklog(ctx)
	}
	pluginCPU := -1.0
	if err == nil && m.pluginCPU != nil && m.w != nil {
		// The plugin's CPU up to the marker, read while it runs: auditd may
		// not reap it at exit, and its rusage would then not hold it.
		pluginCPU = 0
		for pid, c := range descendantsCPU(m.w.pid()) {
			pluginCPU += max(c-m.pluginCPU[pid], 0)
		}
		obs.Note = joinNote(obs.Note, "watcher CPU: auditd's and "+m.plugin+"'s")
	}
	if err == nil {
		err = m.removeRules(ctx)
	}
	if err != nil {
		m.cleanupRun()
		return obs, err
	}
	if m.logFile != "" {
		_, note := diskState(m.conf, filepath.Dir(m.logFile))
		obs.Note = joinNote(obs.Note, note)
	}
	st, err := m.status()
	if err == nil {
		obs.Lost = int64(uint32(st.Lost - m.lost0)) // the kernel counter is 32 bits and wraps
		obs.BacklogWait = backlogWait(m.wait0, st.WaitActual)
	}
	obs.KauditdCPU = m.kauditd.Since()
	counted := m.log != nil
	m.closeLog()
	if m.w != nil {
		w := m.w
		m.w = nil
		total, err := w.stop(syscall.SIGTERM, 20*time.Second)
		if n := killLeftBehind(run.Dir); n > 0 {
			obs.Note = joinNote(obs.Note, fmt.Sprintf("killed %d processes of the run that outlived auditd", n))
		}
		if m.cpu.ok {
			obs.TracerCPU = max(total-m.cpu.start, 0)
		}
		if pluginCPU >= 0 {
			obs.TracerCPU += pluginCPU
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
	if !counted {
		return obs, nil
	}
	c := countTree(evs, uint32(run.RootPID), run.Threads)
	obs.Seen = c.Total()
	obs.Note = joinNote(obs.Note, countNote(run.Workload, expectedOf(m.name, run.Workload), c))
	return obs, nil
}

func (m *auditdMode) closeLog() {
	if m.log != nil {
		m.log.close()
		m.log = nil
	}
}

// drain reads auditd's log from where the run began until the marker
// event (kill(marker, 0)) is in it: then every record before it is
// written. It returns the events of the run's SYSCALL records that carry
// our key. It gives up when auditd died, or when nothing moved (empty
// backlog, log unchanged) for a minute: the marker was lost.
func (m *auditdMode) drain(ctx context.Context, interrupted <-chan struct{}, marker int) ([]procEvent, error) {
	var evs []procEvent
	start, lastMove, lastMarker := time.Now(), time.Now(), time.Now()
	var read int64
	for {
		for {
			line, ok := m.log.next()
			if !ok {
				break
			}
			lastMove = time.Now()
			read += int64(len(line))
			rec, key, ok := m.parse(line)
			if !ok {
				continue
			}
			if markerRecord(rec, marker) {
				return evs, nil
			}
			if key == auditrules.Key {
				if e, ok := syscallEvent(rec); ok {
					evs = append(evs, e)
				}
			}
		}
		if err := m.log.err(); err != nil {
			return nil, err
		}
		if m.w != nil && m.w.exited() {
			return nil, fmt.Errorf("auditd exited before it wrote all records: %s", m.w.output())
		}
		st, err := m.status()
		if err == nil && st.Backlog > 0 {
			lastMove = time.Now()
		}
		if time.Since(lastMove) > 3*time.Second && time.Since(lastMarker) > 3*time.Second {
			// Nothing queued, nothing written: the marker was dropped. Records
			// of the run that were dropped with it are counted lost.
			_ = syscall.Kill(marker, 0)
			lastMarker = time.Now()
		}
		if time.Since(lastMove) > time.Minute {
			what := "auditd's log"
			if m.plugin != "" {
				what = m.plugin + "'s log"
			}
			return nil, fmt.Errorf("%s %s did not get the marker record within a minute: %s", what, m.log.path, m.whyNoMarker(st, err, read))
		}
		select {
		case <-interrupted:
			return nil, fmt.Errorf("interrupted while auditd wrote the run's records (%.0f KiB in %s)", float64(read)/1024, time.Since(start).Round(time.Second))
		case <-ctx.Done():
			// Its queue grows faster than it writes: the node makes more
			// records than this flush mode and disk can take.
			return nil, fmt.Errorf("auditd had not written the run's records %s after the workload ended (it wrote %.0f KiB/s of log meanwhile, %s): %w",
				time.Since(start).Round(time.Second), float64(read)/1024/time.Since(start).Seconds(), m.flushDesc, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// whyNoMarker says, from what the kernel and the disk show now, why the
// marker record did not reach the log: st (or its error) is the kernel's
// audit status, read the bytes of log written since the drain began.
func (m *auditdMode) whyNoMarker(st auditStatus, stErr error, read int64) string {
	if stErr != nil {
		return fmt.Sprintf("the kernel's audit status could not be read (%v)", stErr)
	}
	daemon := 0
	if m.w != nil {
		daemon = m.w.pid()
	} else if m.external != nil {
		daemon = m.external.PID
	}
	lost := uint32(st.Lost - m.lost0)
	switch {
	case st.Enabled == 0:
		return "audit was turned off (enabled 0) during the run, so the kernel made no records; another program set it"
	case daemon != 0 && int(st.PID) != daemon:
		comm, _ := host.ProcComm(uint32(st.PID))
		return fmt.Sprintf("the kernel's audit PID is %d (%s), not auditd's %d: the records went there", st.PID, comm, daemon)
	case lost > 0:
		return fmt.Sprintf("the kernel lost %d records since the run began (backlog limit %d), the marker among them", lost, st.BacklogLimit)
	}
	if p := diskProblem(m.conf, filepath.Dir(filepath.Dir(m.logFile))); p != "" {
		return "the kernel lost none and queues none: " + p
	}
	if m.plugin != "" {
		return fmt.Sprintf("the kernel lost none and queues none, so auditd read every record; its dispatcher drops what %s does not take in time (q_depth %s, overflow_action %s), or %s did not write it (its log grew %d bytes meanwhile)",
			m.plugin, confValue(m.conf, "q_depth", "2000"), confValue(m.conf, "overflow_action", "SYSLOG"), m.plugin, read)
	}
	out := ""
	if m.w != nil {
		out = "; its output: " + m.w.output()
	}
	if read == 0 {
		return "the kernel lost none and queues none, so auditd read every record, but it wrote nothing to its log meanwhile" + out
	}
	return fmt.Sprintf("the kernel lost none and queues none; auditd wrote %d bytes to its log meanwhile, none of them the marker%s", read, out)
}

// waitAuditPIDFree waits until no live process holds the audit PID.
func waitAuditPIDFree(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		pid, comm := auditHolder()
		if pid == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the audit PID is held by process %d (%s), %s after bench's last auditd stopped: stop it first", pid, comm, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitBacklog stands in for the marker when the node's auditd writes no
// log: it waits until the kernel's backlog is empty, for a minute at most.
func (m *auditdMode) waitBacklog(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if st, err := m.status(); err != nil || st.Backlog == 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// isMarker tells the record of kill(marker, 0) in a line of auditd's log.
func isMarker(line []byte, marker int) bool {
	if !bytes.Contains(line, []byte(" pid="+strconv.Itoa(marker)+" ")) {
		return false // most lines: no record to parse
	}
	rec, _, ok := auditLogSyscall(line)
	return ok && markerRecord(rec, marker)
}

// markerRecord tells the SYSCALL record of kill(marker, 0).
func markerRecord(rec auparse.Syscall, marker int) bool {
	if rec.PID != uint32(marker) || rec.Args[1] != 0 {
		return false
	}
	e, ok := syscallEvent(rec)
	return ok && e.Type == vocab.TypeSignal
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

// restore puts back the node's audit settings as bench found them:
// starting auditd enables audit and its audit.rules settings change the
// backlog and its wait time. A tracer started during the run needs audit
// enabled: it is given the node's values to restore when it exits, rather
// than blinded now.
func (m *auditdMode) restore() error {
	if m.found == nil {
		return nil
	}
	_, err := restoreAuditSettings(m.found)
	return err
}

// cleanupRun undoes what a run installed after a failure: rules, the
// daemon, the settings.
func (m *auditdMode) cleanupRun() {
	_ = m.removeRules(context.Background())
	m.closeLog()
	if m.w != nil {
		_, _ = m.w.stop(syscall.SIGTERM, 20*time.Second)
		m.w = nil
		if m.runDir != "" {
			killLeftBehind(m.runDir)
		}
		_ = m.restore()
	}
}

// killLeftBehind kills what a run's auditd left running (its plugin, a
// child that still holds its audit socket and so the audit PID): the next
// run's auditd would be refused the PID. It returns how many it killed.
func killLeftBehind(dir string) int {
	pids := procsWith(dir)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(pids)
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

func (m *auditdMode) status() (auditStatus, error) { return kernelAuditStatus() }

// laurelNodeConf is where the laurel package keeps its config.
const laurelNodeConf = "/etc/laurel/config.toml"

// writeLaurelConf writes, in the run's directory, laurel's plugin file
// into plugins (auditd's private plugin directory) and laurel's config:
// the node's, with its log in dir/laurel, never rotated within a run
// (one run's events stay in one file to be counted), and no user to drop
// to (dir is root's). It returns the path of the log laurel writes.
func (m *auditdMode) writeLaurelConf(dir, plugins string) (string, error) {
	logDir := filepath.Join(dir, "laurel")
	if err := os.Mkdir(logDir, 0o750); err != nil {
		return "", fmt.Errorf("making laurel's log directory: %w", err)
	}
	conf := filepath.Join(dir, "laurel.toml")
	if err := os.WriteFile(conf, []byte(laurelConfig(m.laurelConf, logDir)), 0o640); err != nil {
		return "", fmt.Errorf("writing laurel's config: %w", err)
	}
	plugin := fmt.Sprintf("active = yes\ndirection = out\ntype = always\nformat = string\npath = %s\nargs = --config %s\n", m.laurel, conf)
	if err := os.WriteFile(filepath.Join(plugins, "laurel.conf"), []byte(plugin), 0o640); err != nil {
		return "", fmt.Errorf("writing laurel's plugin file: %w", err)
	}
	return filepath.Join(logDir, "audit.log"), nil
}

// laurelConfig is the node's laurel config (TOML lines) with directory set
// to logDir, user left out, and its [auditlog] writing audit.log with no
// rotation; the rest as the node has it.
func laurelConfig(node []string, logDir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "directory = %q\n", logDir)
	section := ""
	auditlog := false
	for _, l := range node {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			section = strings.Trim(t, "[] ")
			b.WriteString(l + "\n")
			if section == "auditlog" {
				auditlog = true
				b.WriteString("file = \"audit.log\"\nsize = 1099511627776\ngenerations = 1\n")
			}
			continue
		}
		k, _, _ := strings.Cut(t, "=")
		k = strings.TrimSpace(k)
		if (section == "" && (k == "directory" || k == "user")) ||
			(section == "auditlog" && (k == "file" || k == "size" || k == "generations")) {
			continue
		}
		b.WriteString(l + "\n")
	}
	if !auditlog {
		b.WriteString("[auditlog]\nfile = \"audit.log\"\nsize = 1099511627776\ngenerations = 1\n")
	}
	return b.String()
}

// waitFile waits until path exists: laurel opens its log once auditd
// started it.
func (m *auditdMode) waitFile(ctx context.Context, w *watcher, path string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if w.exited() {
			return fmt.Errorf("auditd exited at start: %s", w.output())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not write %s within 30s of auditd's start: %s", m.plugin, path, w.output())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
