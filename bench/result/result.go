// SPDX-License-Identifier: Apache-2.0

// Package result is the file `tracer bench --out` writes and `tracer report`
// and `tracer doctor --bench` read: File, with the node's facts, how the run
// was sized, a Row per workload and mode, and the steps of a --sweep. Read
// and Encode check and keep the schema version. It imports only
// tracer/node/facts (the node's facts, a leaf that tracer/node collects),
// runs nothing and builds on any system. docs/bench-result.md describes the format field by field.
package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Schema is the version of the result file format this tracer writes.
// Schema 2 adds to schema 1's rows the ratio's 95% interval, whether it is
// within noise, the ratio to the mode's floor and the sweep's ceiling; both
// are read.
const Schema = 2

// File is one `tracer bench --out` result: the node it ran on and one row per
// workload and mode.
type File struct {
	Schema  int      `json:"schema"`
	Node    Facts    `json:"node"`
	Run     *RunInfo `json:"run,omitempty"`
	Results []Row    `json:"results"`
	// Sweep holds every step of a --sweep, for the report's ceiling table.
	Sweep []SweepStep `json:"sweep,omitempty"`
}

// RunInfo says which machine and boot a result file comes from (hostnames
// repeat across a fleet) and how the bench was sized.
type RunInfo struct {
	MachineID string    `json:"machine_id,omitempty"` // /etc/machine-id
	BootID    string    `json:"boot_id,omitempty"`    // /proc/sys/kernel/random/boot_id
	Started   time.Time `json:"started"`
	// TargetS is the untraced duration each built-in workload was sized to
	// (0 when --count fixed the counts).
	TargetS float64 `json:"target_s,omitempty"`
	Quick   bool    `json:"quick,omitempty"`
	// Auditd is what bench found and did about the node's auditd: "none",
	// "running (pid N): measured as it is", "stopped for the bench and restarted".
	Auditd string `json:"auditd,omitempty"`
	// Cgroup is bench's --cgroup: the tracer modes watched only that cgroup
	// and what is below it, where the workloads ran.
	Cgroup string `json:"cgroup,omitempty"`
	// Modes says what each mode the bench ran is, so that a reader orders,
	// pairs and colours modes it does not know by name. Absent in files of
	// earlier tracers.
	Modes []Mode `json:"modes,omitempty"`
	// DurationS is the bench's wall time, from its start to its last run;
	// BudgetS the time it was given for rounds past the first three (0: no
	// budget, a fixed number of rounds). Both absent in earlier files.
	DurationS float64 `json:"duration_s,omitempty"`
	BudgetS   float64 `json:"budget_s,omitempty"`
	// Storages are where the event logs went, as the run described them.
	Storages []StorageInfo `json:"storages,omitempty"`
}

// StorageInfo is one storage a bench wrote its event logs to.
type StorageInfo struct {
	Label string `json:"label"` // ssd, hdd, hdd-simulated or a --log-dir
	// Desc is the device and how it behaves: "/var/tmp/... on vda (virtual
	// disk), 4 KiB O_DSYNC write 0.29 ms", or for the simulated HDD the
	// loop device, its throttle and the disk it lives on.
	Desc string `json:"desc"`
}

// Mode is what the bench that wrote a file said of one of its modes.
type Mode struct {
	Name string `json:"name"`
	// Rank is the mode's place in the order the bench runs its modes:
	// this tool's modes, their floors, then the peers.
	Rank int `json:"rank"`
	// Peer: the mode measures another tool (auditd, laurel, bpftrace, the
	// libbpf-tools), not this one.
	Peer bool `json:"peer,omitempty"`
	// Floor names the mode that is this one's lower bound.
	Floor string `json:"floor,omitempty"`
	// Counterpart names the mode of this tool that this one is read beside
	// and compared with: for a peer, the mode that watches what it watches
	// (execsnoop: ebpf-exec; the libbpf-tools and bpftrace: ebpf; auditd
	// and laurel: audit); for a variant of a mode (ebpf-syscalls), that
	// mode.
	Counterpart string `json:"counterpart,omitempty"`
	// Color is the "#rrggbb" colour of the mode's bars and lines in the
	// report; absent, the report's default.
	Color string `json:"color,omitempty"`
}

// Row is one (workload, mode) result. Times are medians over rounds; ratio
// is the median of the per-round ratios to mode none in the same round.
type Row struct {
	Workload string `json:"workload"`
	Mode     string `json:"mode"`
	// Label is what tables show for the mode when it ran in a way its name
	// does not say: "audit (beside auditd)", "auditd (node's)".
	Label          string  `json:"label,omitempty"`
	Storage        string  `json:"storage,omitempty"` // ssd, hdd, hdd-simulated, or a --log-dir
	Count          int64   `json:"count,omitempty"`   // the built-in workload's iterations, kills, calls or spawns
	Rounds         int     `json:"rounds"`
	ElapsedS       float64 `json:"elapsed_s"`
	UserS          float64 `json:"user_s"`
	SysS           float64 `json:"sys_s"`
	CPUPct         float64 `json:"cpu_pct"`
	ElapsedMinS    float64 `json:"elapsed_min_s"`
	ElapsedMaxS    float64 `json:"elapsed_max_s"`
	RatioElapsed   float64 `json:"ratio_elapsed"`
	TracerCPUS     float64 `json:"tracer_cpu_s"`
	KauditdCPUS    float64 `json:"kauditd_cpu_s,omitempty"` // the kernel's audit thread, in modes that use audit
	EventsExpected int64   `json:"events_expected"`         // -1: unknown (a command after --)
	EventsSeen     int64   `json:"events_seen"`             // -1: not watched (mode none) or not countable
	EventsLost     int64   `json:"events_lost"`
	Skipped        string  `json:"skipped,omitempty"` // why the mode did not run (tool not installed, ...)
	// Retried is how many of its rounds failed and were run again (a peer
	// that missed its marker record, say); their causes are in Note.
	Retried int    `json:"retried,omitempty"`
	Note    string `json:"note,omitempty"`

	// Schema 2.

	// RatioCI95 is the 95% interval of the ratio to none; nil with fewer
	// than two rounds.
	RatioCI95 []float64 `json:"ratio_ci95,omitempty"`
	// Noise is true when RatioCI95 contains 1.0 (or there is no interval):
	// the run cannot tell this mode's cost from no cost.
	Noise bool `json:"noise"`
	// Floor names the mode whose run is this mode's lower bound (audit and
	// auditd: audit-floor; ebpf: ebpf-floor); RatioFloor is the median
	// per-round ratio to it, RatioFloorCI95 its interval.
	Floor          string    `json:"floor,omitempty"`
	RatioFloor     float64   `json:"ratio_floor,omitempty"`
	RatioFloorCI95 []float64 `json:"ratio_floor_ci95,omitempty"`
	// MaxEventsPerS is, from --sweep, the highest event rate the mode
	// delivered with nothing lost; MaxEventsLimit says what stopped the
	// sweep there: "lost" (the next step lost events), "behind" (the next
	// step left the audit backlog filling up: sustained, it would lose),
	// "slowed" (the mode held the workload below the asked rate) or
	// "workload" (the workload could go no faster: the mode's ceiling is
	// higher).
	MaxEventsPerS  *float64 `json:"max_events_per_s,omitempty"`
	MaxEventsLimit string   `json:"max_events_limit,omitempty"`

	// Application workloads and commands with --metric: the workload's
	// own figure. Metric names it (requests_per_s, events_per_s,
	// bogo_ops_per_s), MetricUnit is how tables show it, MetricValue is
	// its median over rounds. MetricChangePct is the median per-round
	// change of the figure against none's in the same round, in percent,
	// and MetricChangeCI95 its 95% interval: a throughput (higher is
	// better) that drops under a mode shows as a negative change, its
	// cost; a lower-is-better figure that rises shows as a positive one.
	Metric               string    `json:"metric,omitempty"`
	MetricUnit           string    `json:"metric_unit,omitempty"`
	MetricHigherIsBetter bool      `json:"metric_higher_is_better,omitempty"`
	MetricValue          float64   `json:"metric_value,omitempty"`
	MetricChangePct      *float64  `json:"metric_change_pct,omitempty"`
	MetricChangeCI95     []float64 `json:"metric_change_ci95,omitempty"`
	// Ops is the median of the operations the workload said it did
	// (stress-ng's bogo ops); EventsPerOp the median per-round ratio of
	// events seen to them, where the mode counts events.
	Ops         int64    `json:"ops,omitempty"`
	EventsPerOp *float64 `json:"events_per_op,omitempty"`

	// Rate workloads (exec-rate, signal-rate) and the watcher's cost per
	// event; every field is optional.

	// RatePerS is the events a second a rate workload was paced at;
	// RateAchievedPerS the median rate it reached (its events over its
	// elapsed time). RateHeld is false when a round fell short of the
	// rate (by more than a tenth): the machine could not hold it, and
	// that round's figures are left out of WatcherCPUPerEventUS.
	RatePerS         float64 `json:"rate_per_s,omitempty"`
	RateAchievedPerS float64 `json:"rate_achieved_per_s,omitempty"`
	RateHeld         *bool   `json:"rate_held,omitempty"`
	// WatcherCPUPerEventUS is the watcher's CPU per event, in
	// microseconds: the CPU of the watching processes plus kauditd's, over
	// the events the workload made of the classes the mode watches; the
	// median over rounds (rounds that held the rate), with its 95%
	// interval. Nil for none, and where the workload's events are not known.
	WatcherCPUPerEventUS   *float64  `json:"watcher_cpu_per_event_us,omitempty"`
	WatcherCPUPerEventCI95 []float64 `json:"watcher_cpu_per_event_ci95,omitempty"`
	// DelayP99Ms is the watcher's 99th percentile delay from an event's
	// kernel time to its output, in milliseconds (tracer modes: its
	// --stats-file's delay_p99_ms), the median over rounds. Nil where the
	// watcher gives none.
	DelayP99Ms *float64 `json:"delay_p99_ms,omitempty"`
	// NodeBusyCPUS is the node's busy CPU (all CPUs, every process and the
	// kernel) while the workload ran, median over rounds: what the watcher's
	// figure is beside.
	NodeBusyCPUS float64 `json:"node_busy_cpu_s,omitempty"`
}

// WorkloadLabel is the row's workload as tables show it: with its rate
// for a rate workload ("exec-rate 300/s"), so that rows of one workload at
// several rates stay apart.
func (r Row) WorkloadLabel() string {
	if r.RatePerS > 0 {
		return r.Workload + " " + strconv.FormatFloat(r.RatePerS, 'f', -1, 64) + "/s"
	}
	return r.Workload
}

// SweepStep is one run of a --sweep: a workload paced at TargetPerS under
// one mode.
type SweepStep struct {
	Workload   string  `json:"workload"`
	Mode       string  `json:"mode"`
	Label      string  `json:"label,omitempty"`
	Storage    string  `json:"storage,omitempty"`
	TargetPerS float64 `json:"target_per_s"`
	Events     int64   `json:"events_expected"`
	ElapsedS   float64 `json:"elapsed_s"`
	// PerS is the rate the workload reached: its events over its elapsed time.
	PerS float64 `json:"events_per_s"`
	Seen int64   `json:"events_seen"`
	Lost int64   `json:"events_lost"`
	// Queued is the kernel's audit backlog when the workload ended, of
	// QueueLimit.
	Queued     int64 `json:"audit_queued,omitempty"`
	QueueLimit int64 `json:"audit_backlog_limit,omitempty"`
	// OK: nothing lost, where the mode counts every event seen, and the
	// audit backlog not left filling up.
	OK  bool   `json:"ok"`
	Err string `json:"error,omitempty"`
}

// MaxQueuedShare is how full the audit backlog may be when a sweep step's
// workload ends. A step is short and the backlog long (131072 records while
// a tracer holds the audit PID): a reader that falls behind loses nothing in
// one step, but would in a longer burst. A backlog more than this share full
// is falling behind (a reader's latency alone leaves a few thousand records
// queued).
const MaxQueuedShare = 0.5

// Behind reports whether the step left the audit backlog more than
// MaxQueuedShare full.
func (s SweepStep) Behind() bool {
	return s.QueueLimit > 0 && float64(s.Queued) > MaxQueuedShare*float64(s.QueueLimit)
}

// ModeLabel is a row's mode as tables show it: its label, with its storage
// when it names one.
func (r Row) ModeLabel() string {
	m := r.Mode
	if r.Label != "" {
		m = r.Label
	}
	if r.Storage == "" {
		return m
	}
	return m + " (" + r.Storage + ")"
}

// Name is the row's mode or label, without storage.
func (r Row) Name() string {
	if r.Label != "" {
		return r.Label
	}
	return r.Mode
}

// Read reads and checks a result file of schema 1 or 2: it must have the
// node's facts and at least one row, or there is nothing to report on.
// Errors say what is wrong with the file, not how Go decodes it.
func Read(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading result file: %w", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("result file %s is empty: nothing to report", path)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("parsing result file %s: %s", path, jsonProblem(err))
	}
	if f.Schema < 0 || f.Schema > Schema {
		return nil, fmt.Errorf("result file %s has schema %d, this tracer reads schemas 1 to %d", path, f.Schema, Schema)
	}
	var missing []string
	if f.Schema == 0 {
		missing = append(missing, `no "schema"`)
	}
	if f.Node.Kernel == "" {
		// Every bench run reads the kernel release: no kernel, no node.
		missing = append(missing, `no "node" facts`)
	}
	if len(f.Results) == 0 {
		missing = append(missing, `no "results"`)
	}
	if len(missing) > 0 {
		what := missing[len(missing)-1]
		if len(missing) > 1 {
			what = strings.Join(missing[:len(missing)-1], ", ") + " and " + what
		}
		return nil, fmt.Errorf("result file %s has %s: nothing to report", path, what)
	}
	return &f, nil
}

// jsonProblem says what is wrong with a file json.Unmarshal refused, in
// the file's terms: where, and what JSON kind was found for what was expected.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tm *time.ParseError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("not JSON (at byte %d: %v)", syn.Offset, syn)
	case errors.As(err, &typ):
		where := "the file"
		if typ.Field != "" {
			where = fmt.Sprintf("%q", typ.Field)
		}
		return fmt.Sprintf("%s holds a JSON %s where %s belongs", where, typ.Value, jsonKind(typ.Type))
	case errors.As(err, &tm):
		return fmt.Sprintf("the time %q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", tm.Value)
	}
	return err.Error()
}

// jsonKind names the JSON a Go type is read from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a whole number"
}

// Encode writes f as indented JSON, the form Read reads. The file is the
// caller's to create (sink.CreateOutput: mode 0600, never through a
// symlink), which keeps this package a leaf.
func Encode(w io.Writer, f *File) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding result file: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing result file: %w", err)
	}
	return nil
}
