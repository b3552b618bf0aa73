package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints results as the seed printed its figures (elapsed, user,
// sys, CPU% of the workload), one row per workload, mode and storage, with
// the ratio to none, the watcher's own CPU and events expected, seen and
// lost. A mode that loses or misses events says so right after its ratio.
// Notes follow the table.
func WriteTable(out io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tMODE\tSTORAGE\tELAPSED\tMIN..MAX\tUSER\tSYS\tCPU\tRATIO\t\tEVENTS EXP/SEEN/LOST\tTRACER CPU")
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
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\t\t\t\t\t\t\t\n", r.Workload, r.Mode, storage, what)
			notes = append(notes, fmt.Sprintf("%s %s: %s", r.Workload, r.Mode, r.Skipped))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2fs\t%.2f..%.2f\t%.2f\t%.2f\t%.0f%%\t%.2fx\t%s\t%s\t%s\n",
			r.Workload, r.Mode, storage, r.ElapsedS, r.ElapsedMinS, r.ElapsedMaxS, r.UserS, r.SysS, r.CPUPct,
			r.RatioElapsed, lossFlag(r), events(r), tracerCPU(r))
		if r.Note != "" {
			label := r.Workload + " " + r.Mode
			if r.Storage != "" {
				label += "@" + r.Storage
			}
			notes = append(notes, label+": "+r.Note)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		if _, err := fmt.Fprintln(out, "  "+n); err != nil {
			return err
		}
	}
	return nil
}

// lossFlag is what stands next to a mode's ratio when it did not see
// everything: events lost (the watcher says so) or missed (fewer seen in
// the workload's tree than it made).
func lossFlag(r Result) string {
	var f []string
	if r.EventsLost > 0 {
		f = append(f, fmt.Sprintf("LOST %d", r.EventsLost))
	}
	if r.EventsExpected >= 0 && r.EventsSeen >= 0 && r.EventsSeen < r.EventsExpected {
		f = append(f, fmt.Sprintf("MISSED %d", r.EventsExpected-r.EventsSeen))
	}
	return strings.Join(f, " ")
}

func events(r Result) string {
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

func tracerCPU(r Result) string {
	if r.Mode == "none" {
		return "-"
	}
	s := fmt.Sprintf("%.2fs", r.TracerCPUS)
	if r.KauditdCPUS > 0 {
		s += fmt.Sprintf(" +kauditd %.2fs", r.KauditdCPUS)
	}
	return s
}
