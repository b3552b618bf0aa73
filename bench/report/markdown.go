// SPDX-License-Identifier: Apache-2.0

package report

import (
	_ "embed"
	"fmt"
	"io"
	"math"
	"strings"
	"text/template"

	"github.com/tracer-dev/tracer/bench/result"
	"github.com/tracer-dev/tracer/tracer/node"
)

//go:embed report.md.tmpl
var reportMarkdownTmpl string

var reportMarkdown = template.Must(template.New("md").Funcs(reportFuncs(func(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
})).Parse(reportMarkdownTmpl))

// WriteMarkdown renders r as Markdown that reads well on a code forge: tables,
// and the bar chart as a text block of Unicode bars.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	if err := reportMarkdown.ExecuteTemplate(&b, "report", r); err != nil {
		return fmt.Errorf("rendering markdown report: %w", err)
	}
	// Collapse the blank lines the template's layout leaves.
	out := b.String()
	for strings.Contains(out, "\n\n\n") {
		out = strings.ReplaceAll(out, "\n\n\n", "\n\n")
	}
	_, err := io.WriteString(w, strings.TrimLeft(out, "\n"))
	return err
}

// reportFuncs are the template functions both formats share; cell escapes
// a table cell for the format.
func reportFuncs(cell func(string) string) template.FuncMap {
	return template.FuncMap{
		"cell":  cell,
		"join":  strings.Join,
		"f0":    func(v float64) string { return fmt.Sprintf("%.0f", v) },
		"f2":    func(v float64) string { return fmt.Sprintf("%.2f", v) },
		"ratio": func(v float64) string { return fmt.Sprintf("%.2fx", v) },
		"pct":   func(v float64) string { return fmt.Sprintf("%+.0f%%", v) },
		"interval": func(r result.Row) string {
			if r.Mode == "none" || len(r.RatioCI95) != 2 {
				return "-"
			}
			return fmt.Sprintf("%.2f-%.2f", r.RatioCI95[0], r.RatioCI95[1])
		},
		"significance": func(r result.Row) string {
			switch {
			case r.Mode == "none":
				return ""
			case len(r.RatioCI95) != 2 && r.Rounds < 2:
				return "not significant (1 round)"
			case r.Noise:
				return "within noise"
			case r.RatioElapsed < 1:
				// Watching never speeds a workload up: the untraced rounds
				// were slowed by something else.
				return "below 1x: drift"
			}
			return ""
		},
		"floorcell": floorCell,
		"maxrate": func(r result.Row) string {
			if r.MaxEventsPerS == nil {
				return "-"
			}
			return FormatRate(*r.MaxEventsPerS, r.MaxEventsLimit)
		},
		"limitwhy": func(limit string) string {
			return map[string]string{"lost": "the next step lost events", "behind": "at the next step the audit backlog was filling up",
				"slowed":   "it held the workload below the asked rate",
				"workload": "the workload could go no faster here"}[limit]
		},
		"textchart": textChart,
		"us":        usText,
		"figure":    FormatFigure,
		"change":    ChangeCell,
		"changeiv":  changeIntervalCell,
		"perop":     perOpCell,
		"worse":     worse,
		"pct1":      func(v float64) string { return fmt.Sprintf("%+.1f%%", v) },
		"count": func(v int64) string {
			if v < 0 {
				return "-" // the mode cannot tell
			}
			return fmt.Sprint(v)
		},
		"rowNotes": func(rs []result.Row) []result.Row {
			var out []result.Row
			for _, r := range rs {
				if rowNote(r) != "" {
					out = append(out, r)
				}
			}
			return out
		},
		"rowNote": rowNote,
		"tracercpu": func(r result.Row) string {
			if r.Mode == "none" || floorName(r.Mode) {
				return "-" // no watcher
			}
			return fmt.Sprintf("%.2f", r.TracerCPUS)
		},
		"notHeldNote": func() string { return notHeldNote },
		"peersNote":   func() string { return peersNote },
		"peersFew":    peersFew,
		"limitNotes": func(rs []result.Row) []string {
			var out []string
			for i := range rs {
				if rs[i].Mode == "none" {
					if l := nodeLimit(&rs[i]); l != "" {
						out = append(out, rs[i].WorkloadLabel()+": "+l)
					}
				}
			}
			return out
		},
		"auditLine": factsAudit,
		"rulesLine": factsRules,
		"ebpfLine":  factsEBPF,
		"bitsLine":  factsBits,
		"diskLine":  factsDisk,
	}
}

func factsAudit(f node.Facts) string {
	a := f.Audit
	if node.No(a.Supported) {
		return "not compiled in"
	}
	st := a.Status
	if st == nil {
		return "state not read (collected without root)"
	}
	pid := "no audit PID"
	if st.PID != 0 {
		pid = fmt.Sprintf("PID %d (%s)", st.PID, st.PIDComm)
	}
	return fmt.Sprintf("%s, %s, backlog limit %d, wait time %d, lost %d", st.State(), pid, st.BacklogLimit, st.BacklogWaitTime, st.Lost)
}

func factsRules(f node.Facts) string {
	if !f.Audit.RulesRead {
		return "not read"
	}
	return fmt.Sprintf("%d loaded, %d with the tracer's key", len(f.Audit.Rules), f.Audit.TracerRules)
}

func factsEBPF(f node.Facts) string {
	e := f.EBPF
	yn := func(b *bool) string {
		switch {
		case b == nil:
			return "?"
		case *b:
			return "yes"
		}
		return "no"
	}
	tracefs := e.Tracefs
	if tracefs == "" {
		tracefs = "not mounted"
	}
	return fmt.Sprintf("BTF %s, ring buffer %s, BTF tracepoints %s, fentry %s, syscall tracepoints %s, kprobes %s, tracefs %s, lockdown %s",
		yn(e.BTF), yn(e.RingBuf), yn(e.BTFTracepoints), yn(e.Fentry), yn(e.SyscallTracepoints), yn(e.Kprobes), tracefs, f.LockdownText())
}

func factsBits(f node.Facts) string {
	p := f.Procs
	if len(p.Bits32) == 0 {
		if p.Scanned == 0 {
			return "not scanned"
		}
		return fmt.Sprintf("none of %d (b64 rules suffice)", p.Scanned)
	}
	var names []string
	for i, pr := range p.Bits32 {
		if i == 3 {
			names = append(names, "...")
			break
		}
		names = append(names, pr.Comm)
	}
	return fmt.Sprintf("%d (%s): rules need b32 copies", len(p.Bits32), strings.Join(names, ", "))
}

func factsDisk(f node.Facts) string {
	d := f.LogDisk
	disks := strings.Join(d.Disks, ", ")
	if disks == "" {
		disks = d.Source
	}
	return fmt.Sprintf("%s on %s: %s", d.Path, disks, strings.ToUpper(d.Kind()))
}

// textChart draws one workload's bars with Unicode blocks, 1/8 of a cell
// per step, on the chart's own scale (logarithmic when the bars span more
// than tenfold), and each bar's 95% interval: shaded from its low end to
// the bar's end, a line with a cap past it to its high end.
func textChart(c Chart) string {
	const width = 40
	labelW := len(c.Workload)
	for _, b := range c.Bars {
		labelW = max(labelW, len(b.Label)+2)
	}
	var sb strings.Builder
	legend := ""
	for _, b := range c.Bars {
		if b.Hi > 0 {
			legend = "; ▒ and ─┤: 95% interval"
		}
	}
	if c.Paced {
		legend += "; paced: the same time under every mode, its cost is per event"
	}
	if c.Log {
		fmt.Fprintf(&sb, "%s (log scale %gx to %gx%s)\n", c.Workload, c.Min, c.Max, legend)
	} else {
		fmt.Fprintf(&sb, "%s (scale 0 to %gx%s)\n", c.Workload, c.Max, legend)
	}
	for _, b := range c.Bars {
		fmt.Fprintf(&sb, "  %-*s %s %6.2fx", labelW-2, b.Label, intervalBar(c, b, width), b.Ratio)
		if b.Hi > 0 {
			fmt.Fprintf(&sb, " [%.2f-%.2f]", b.Lo, b.Hi)
		}
		switch {
		case b.Noise && b.Mode != "none":
			sb.WriteString(" within noise")
		case b.Hi > 0 && b.Hi < 1:
			sb.WriteString(" below 1x: drift")
		}
		if b.Lost > 0 {
			fmt.Fprintf(&sb, "  (%d lost)", b.Lost)
		}
		sb.WriteByte('\n')
	}
	sb.WriteByte('\n')
	return sb.String()
}

// intervalBar is unicodeBar with the interval drawn over it.
func intervalBar(c Chart, b Bar, width int) string {
	bar := []rune(unicodeBar(c.Pos(b.Ratio)*float64(width), width))
	if b.Hi <= 0 {
		return string(bar)
	}
	cell := func(v float64) int {
		return min(width-1, max(0, int(math.Floor(c.Pos(v)*float64(width)))))
	}
	lo, mid, hi := cell(b.Lo), cell(b.Ratio), cell(b.Hi)
	for i := lo; i < mid; i++ {
		bar[i] = '▒'
	}
	if hi > mid && bar[mid] == ' ' {
		bar[mid] = '─'
	}
	for i := mid + 1; i < hi; i++ {
		bar[i] = '─'
	}
	if hi > mid {
		bar[hi] = '┤'
	}
	return string(bar)
}

var eighths = []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}

func unicodeBar(cells float64, width int) string {
	if cells < 0 || math.IsNaN(cells) {
		cells = 0
	}
	steps := int(math.Round(cells * 8))
	full, rest := steps/8, steps%8
	s := strings.Repeat("█", full) + eighths[rest]
	n := full
	if rest > 0 {
		n++
	}
	if n < width {
		s += strings.Repeat(" ", width-n)
	}
	return s
}
