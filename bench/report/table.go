// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/tracer-dev/tracer/bench/result"
)

// WriteTable prints results one row per workload, mode and storage: the
// workload's elapsed, user, sys and CPU% as /usr/bin/time prints them, the
// ratio to none with its 95% interval ("noise" when that interval holds
// 1.00x: the run cannot tell the mode's cost from none), the ratio to the
// mode's floor, events expected, seen and lost, the watcher's own CPU and,
// after a --sweep, the highest event rate the mode delivered with nothing
// lost. A mode that loses or misses events says so right after its ratio.
// Notes follow the table.
func WriteTable(out io.Writer, results []result.Row) error {
	sweep, apps := false, false
	for _, r := range results {
		if r.MaxEventsPerS != nil {
			sweep = true
		}
		if r.Metric != "" {
			apps = true
		}
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	head := "WORKLOAD\tMODE\tSTORAGE\tELAPSED\tMIN..MAX\tUSER\tSYS\tCPU\tRATIO\t95% INTERVAL\t\tVS FLOOR\tEVENTS EXP/SEEN/LOST\tTRACER CPU"
	if sweep {
		head += "\tMAX EVENTS/S"
	}
	if apps {
		head += "\tFIGURE\tCHANGE"
	}
	fmt.Fprintln(tw, head)
	var notes []string
	for _, r := range results {
		storage := r.Storage
		if storage == "" {
			storage = "-"
		}
		if r.Skipped != "" {
			what := "skipped"
			if strings.HasPrefix(r.Skipped, "failed") {
				what = "FAILED"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\t\t\t\t\t\t\t\t\t\n", r.WorkloadLabel(), r.Name(), storage, what)
			notes = append(notes, fmt.Sprintf("%s %s: %s", r.WorkloadLabel(), r.Name(), r.Skipped))
			continue
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%.2fs\t%.2f..%.2f\t%.2f\t%.2f\t%.0f%%\t%.2fx\t%s\t%s\t%s\t%s\t%s",
			r.WorkloadLabel(), r.Name(), storage, r.ElapsedS, r.ElapsedMinS, r.ElapsedMaxS, r.UserS, r.SysS, r.CPUPct,
			r.RatioElapsed, intervalCell(r), lossFlag(r), floorCell(r), events(r), tracerCPU(r))
		if sweep {
			line += "\t" + maxRateCell(r)
		}
		if apps {
			line += "\t" + appTableCells(r)
		}
		fmt.Fprintln(tw, line)
		if note := rowNote(r); note != "" {
			label := r.WorkloadLabel() + " " + r.Name()
			if r.Storage != "" {
				label += "@" + r.Storage
			}
			notes = append(notes, label+": "+note)
		}
		if r.Mode == "none" {
			if l := nodeLimit(&r); l != "" {
				notes = append(notes, r.WorkloadLabel()+": "+l)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	notes = append(notes, "ratio: median of the per-round ratios to none; 95% interval: Student's t on their logarithms; "+
		"noise: the interval holds 1.00x, so this run cannot tell the cost from none; drift: it lies below 1.00x, "+
		"so the untraced rounds were slowed by something else on the node")
	if apps {
		notes = append(notes, "figure: the workload's own (median); change: its median per-round change against none, "+
			"± half its 95% interval; for a throughput a negative change is the mode's cost")
	}
	for _, n := range notes {
		if _, err := fmt.Fprintln(out, "  "+n); err != nil {
			return err
		}
	}
	return nil
}

// intervalCell is a row's 95% interval, with "noise" when it holds 1.00x.
func intervalCell(r result.Row) string {
	if r.Mode == "none" {
		return "-"
	}
	if len(r.RatioCI95) != 2 {
		return "n/a (1 round) noise"
	}
	s := fmt.Sprintf("%.2f-%.2f", r.RatioCI95[0], r.RatioCI95[1])
	switch {
	case r.Noise:
		s += " noise"
	case r.RatioCI95[1] < 1:
		// Watching never speeds a workload up: the baseline's rounds were
		// the ones slowed, by something else on the node.
		s += " below 1x: drift"
	}
	return s
}

// floorCell is a row's ratio to its floor and that ratio's interval.
func floorCell(r result.Row) string {
	if r.Floor == "" || r.RatioFloor == 0 {
		return "-"
	}
	s := fmt.Sprintf("%.2fx", r.RatioFloor)
	if len(r.RatioFloorCI95) == 2 {
		s += fmt.Sprintf(" (%.2f-%.2f)", r.RatioFloorCI95[0], r.RatioFloorCI95[1])
	}
	return s
}

func maxRateCell(r result.Row) string {
	if r.MaxEventsPerS == nil {
		return "-"
	}
	return FormatRate(*r.MaxEventsPerS, r.MaxEventsLimit)
}

// FormatRate writes a sweep ceiling: "410k/s", ">= 560k/s" when the
// workload itself could go no faster, "< 20k/s" when even the first step
// lost events.
func FormatRate(v float64, limit string) string {
	switch {
	case limit == "workload":
		return ">=" + humanRate(v)
	case v <= 0:
		return "lost at every rate"
	}
	return humanRate(v)
}

func humanRate(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM/s", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk/s", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk/s", v/1e3)
	}
	return fmt.Sprintf("%.0f/s", math.Round(v))
}

// WriteSweepTable prints the sweep's steps: per workload and asked rate,
// the rate each mode reached and what it lost.
func WriteSweepTable(out io.Writer, results []result.Row, steps []result.SweepStep) error {
	fmt.Fprintln(out)
	fmt.Fprintln(out, "SWEEP: the rate each mode reached at each asked rate (events/s; LOST: events lost or missed)")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tMODE\tSTORAGE\tASKED\tREACHED\tEVENTS\tLOST")
	for _, s := range steps {
		storage := s.Storage
		if storage == "" {
			storage = "-"
		}
		name := s.Mode
		if s.Label != "" {
			name = s.Label
		}
		lost := fmt.Sprint(s.Lost)
		switch {
		case s.Err != "":
			lost = "FAILED: " + s.Err
		case s.Behind():
			lost = fmt.Sprintf("%d (%d records still queued)", s.Lost, s.Queued)
		case s.Seen >= 0 && s.Seen < s.Events:
			lost = fmt.Sprintf("%d (missed %d)", s.Lost, s.Events-s.Seen)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", s.Workload, name, storage, humanRate(s.TargetPerS), humanRate(s.PerS), s.Events, lost)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out, "CEILING: the highest rate delivered with nothing lost")
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, r := range results {
		if r.MaxEventsPerS == nil {
			continue
		}
		why := map[string]string{"lost": "the next step lost events", "behind": "at the next step the audit backlog was filling up",
			"slowed":   "the mode held the workload below the asked rate",
			"workload": "the workload could go no faster"}[r.MaxEventsLimit]
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.Workload, r.ModeLabel(), maxRateCell(r), why)
	}
	return tw.Flush()
}

// lossFlag is what stands next to a mode's ratio when it did not see
// everything: events lost (the watcher says so) or missed (fewer seen in
// the workload's tree than it made).
func lossFlag(r result.Row) string {
	var f []string
	if r.EventsLost > 0 {
		f = append(f, fmt.Sprintf("LOST %d", r.EventsLost))
	}
	if r.EventsExpected >= 0 && r.EventsSeen >= 0 && r.EventsSeen < r.EventsExpected {
		f = append(f, fmt.Sprintf("MISSED %d", r.EventsExpected-r.EventsSeen))
	}
	return strings.Join(f, " ")
}

func events(r result.Row) string {
	num := func(n int64) string {
		if n < 0 {
			return "-"
		}
		return fmt.Sprint(n)
	}
	if r.Mode == "none" {
		return num(r.EventsExpected) + "/-/-"
	}
	return num(r.EventsExpected) + "/" + num(r.EventsSeen) + "/" + fmt.Sprint(r.EventsLost)
}

// rowNote is what the notes say of a row: the rounds it retried, then
// the bench's note.
func rowNote(r result.Row) string {
	var parts []string
	if r.Retried > 0 {
		parts = append(parts, fmt.Sprintf("retried %d round%s", r.Retried, plural(r.Retried)))
	}
	if r.Note != "" {
		parts = append(parts, r.Note)
	}
	return strings.Join(parts, "; ")
}

// floorName: the mode is a floor by its name, for callers that have no
// mode table (every floor bench has is named so).
func floorName(mode string) bool { return strings.Contains(mode, "-floor") }

// tracerCPU is the watcher's CPU; "-" for none and for a floor, which have
// no watcher (an audit floor's kauditd is shown).
func tracerCPU(r result.Row) string {
	if r.Mode == "none" {
		return "-"
	}
	if floorName(r.Mode) {
		if r.KauditdCPUS > 0 {
			return fmt.Sprintf("- (kauditd %.2fs)", r.KauditdCPUS)
		}
		return "-"
	}
	s := fmt.Sprintf("%.2fs", r.TracerCPUS)
	if r.KauditdCPUS > 0 {
		s += fmt.Sprintf(" +kauditd %.2fs", r.KauditdCPUS)
	}
	return s
}
