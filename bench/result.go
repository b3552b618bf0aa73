package bench

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/node"
)

// Schema is the version of the result file format (SPEC.md "bench result file").
const Schema = 1

// File is one `tracer bench --out` result: the node it ran on and one row per
// workload and mode.
type File struct {
	Schema  int        `json:"schema"`
	Node    node.Facts `json:"node"`
	Results []Result   `json:"results"`
}

// Result is one (workload, mode) row. Times are medians over rounds; ratio is
// the median of the per-round ratios to mode none in the same round.
type Result struct {
	Workload       string  `json:"workload"`
	Mode           string  `json:"mode"`
	Storage        string  `json:"storage,omitempty"` // ssd, hdd, hdd-simulated, or a --log-dir
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
	Note           string  `json:"note,omitempty"`
}

// ReadFile reads and checks a result file.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading result file: %w", err)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("parsing result file %s: %w", path, err)
	}
	if f.Schema != Schema {
		return nil, fmt.Errorf("result file %s has schema %d, this tracer reads schema %d", path, f.Schema, Schema)
	}
	return &f, nil
}

// WriteFile writes f as indented JSON, to a file made by tracer.CreateOutput
// (mode 0600, never through a symlink).
func WriteFile(path string, f *File) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding result file: %w", err)
	}
	out, err := tracer.CreateOutput(path)
	if err != nil {
		return fmt.Errorf("writing result file: %w", err)
	}
	_, err = out.Write(append(b, '\n'))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing result file: %w", err)
	}
	return nil
}
