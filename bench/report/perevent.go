// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	htmltemplate "html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/tracer-dev/tracer/bench/result"
)

// PerEventTable is one rate workload's watcher CPU per event: a row per
// mode, a column per rate.
type PerEventTable struct {
	Workload string
	Rates    []string // "100/s"
	Rows     []PerEventRow
	// Limits are the rates the untraced run itself did not reach: "1000/s:
	// the node's limit: untraced reached 460/s of 1000/s".
	Limits []string
	// Few: some "-" stands for fewer than 100 events.
	Few bool
}

// FewNote is the footnote of a "-" that stands for too few events.
func (PerEventTable) FewNote() string { return fewEventsNote }

// PerEventRow is one mode across the rates.
type PerEventRow struct {
	Mode  string
	Color string   // the mode's, as its result file says ("#rrggbb")
	Cells []string // "12.3 (11.0-14.1)", "not held (812/s)", "-"
	// Values are the figures the chart draws, 0 where there is none.
	Values []float64
}

// PeerComparison is where this tool stands against one peer on one
// workload: the ratio of their watcher CPU per event.
type PeerComparison struct {
	Workload string
	Peer     string
	PeerUS   float64
	Tracer   string // the mode of this tool that does what the peer does
	TracerUS float64
	Ratio    float64 // tracer's over the peer's; 0 when either has no figure
	// PeerCell and TracerCell are the figures as shown: "-" where there
	// is none (fewer than 100 events), "not held (N/s)".
	PeerCell, TracerCell string
	// Overlap: the two figures' 95% intervals overlap, so the run cannot
	// tell which costs less. Why says why there is no ratio, if not "-".
	Overlap bool
	Why     string
}

// Text says the ratio in words: "2.1x the peer's CPU per event", "0.45x".
func (c PeerComparison) Text() string {
	switch {
	case c.Ratio == 0 && c.Why != "":
		return c.Why
	case c.Ratio == 0:
		return "-"
	case c.Overlap:
		return fmt.Sprintf("%.2fx: not told apart (intervals overlap)", c.Ratio)
	case c.Ratio >= 1.05:
		return fmt.Sprintf("%.2fx: %s costs more per event", c.Ratio, c.Tracer)
	case c.Ratio <= 0.95:
		return fmt.Sprintf("%.2fx: %s costs less per event", c.Ratio, c.Tracer)
	}
	return fmt.Sprintf("%.2fx: about the same", c.Ratio)
}

// notHeldNote says what "not held" and "the node's limit" mean, the same
// in every format.
const notHeldNote = "not held (N/s): untraced the node kept the workload at the rate, under that mode it reached only N/s, " +
	"so there is no figure at the rate; the node's limit: untraced it did not reach the rate either, " +
	"so the figures there are at the rate each mode reached"

func usText(v float64) string {
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func rateText(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) + "/s" }

// perEventTables builds a table per rate workload from rows in report
// order (workload, rate, mode).
func perEventTables(rows []result.Row, modes *modeTable) []PerEventTable {
	var out []PerEventTable
	for _, r := range rows {
		if r.RatePerS <= 0 {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Workload != r.Workload {
			out = append(out, PerEventTable{Workload: r.Workload})
		}
		t := &out[len(out)-1]
		rate := rateText(r.RatePerS)
		limit := nodeLimit(noneRow(rows, r.WorkloadLabel()))
		if r.Mode == "none" {
			if limit != "" {
				t.Limits = append(t.Limits, rate+": "+limit)
			}
			continue
		}
		col := indexOf(t.Rates, rate)
		if col < 0 {
			t.Rates = append(t.Rates, rate)
			col = len(t.Rates) - 1
			for i := range t.Rows {
				t.Rows[i].Cells = append(t.Rows[i].Cells, "-")
				t.Rows[i].Values = append(t.Rows[i].Values, 0)
			}
		}
		mode := r.ModeLabel()
		row := -1
		for i := range t.Rows {
			if t.Rows[i].Mode == mode {
				row = i
			}
		}
		if row < 0 {
			t.Rows = append(t.Rows, PerEventRow{Mode: mode, Color: modes.color(r.Mode), Cells: make([]string, len(t.Rates)), Values: make([]float64, len(t.Rates))})
			row = len(t.Rows) - 1
			for i := range t.Rows[row].Cells {
				t.Rows[row].Cells[i] = "-"
			}
		}
		v, cell, ok, few := perEvent(r, limit, modes.isFloor(r.Mode))
		t.Rows[row].Cells[col] = cell
		t.Few = t.Few || few
		if ok {
			t.Rows[row].Values[col] = v
		}
	}
	for i := range out {
		t := &out[i]
		sort.SliceStable(t.Rows, func(a, b int) bool {
			return modes.rank(modeOf(t.Rows[a].Mode)) < modes.rank(modeOf(t.Rows[b].Mode))
		})
	}
	return out
}

func modeOf(label string) string { m, _, _ := strings.Cut(label, " "); return m }

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// peerComparisons pairs each peer row that has a CPU per event with its
// counterpart of this tool on the same workload (and rate): on the same
// storage where both wrote a log, else the counterpart's first. A figure
// over fewer than 100 events, or at a rate the mode did not hold, is shown
// as such and not compared.
func peerComparisons(rows []result.Row, modes *modeTable) []PeerComparison {
	var out []PeerComparison
	for _, p := range rows {
		own := modes.counterpart(p.Mode)
		if own == "" || p.WatcherCPUPerEventUS == nil || *p.WatcherCPUPerEventUS <= 0 {
			continue
		}
		var match *result.Row
		for i := range rows {
			t := &rows[i]
			if t.Mode != own || t.WorkloadLabel() != p.WorkloadLabel() || t.WatcherCPUPerEventUS == nil {
				continue
			}
			if match == nil || (t.Storage == p.Storage && match.Storage != p.Storage) {
				match = t
			}
		}
		if match == nil {
			continue
		}
		limit := nodeLimit(noneRow(rows, p.WorkloadLabel()))
		pv, pc, pok, _ := perEvent(p, limit, false)
		tv, tc, tok, _ := perEvent(*match, limit, false)
		c := PeerComparison{Workload: p.WorkloadLabel(), Peer: p.ModeLabel(), PeerUS: pv, PeerCell: pc,
			Tracer: match.ModeLabel(), TracerUS: tv, TracerCell: tc}
		if !pok && !tok && pc == "-" && tc == "-" {
			// Nothing to show on either side.
			continue
		}
		switch {
		case pok && tok && limit != "":
			// Each figure is at the rate its mode reached.
			c.Why = "not compared: each at the rate it reached (" + limit + ")"
		case pok && tok && pv > 0:
			c.Ratio = tv / pv
			c.Overlap = !apart(perEventMeasure(p), perEventMeasure(*match))
		}
		out = append(out, c)
	}
	return out
}

// perEventMeasure is a row's CPU per event as a measure, whatever its
// workload's pace.
func perEventMeasure(r result.Row) measure {
	m := measure{perEvent: true, ok: r.WatcherCPUPerEventUS != nil}
	if m.ok {
		m.v = *r.WatcherCPUPerEventUS
	}
	if ci := r.WatcherCPUPerEventCI95; len(ci) == 2 {
		m.lo, m.hi, m.ci = ci[0], ci[1], true
	}
	return m
}

// peersFew reports whether some peer comparison lacks a figure for too few
// events (where neither side has one, the comparison is left out).
func peersFew(peers []PeerComparison) bool {
	for _, c := range peers {
		if c.Ratio == 0 && (c.PeerCell == "-" || c.TracerCell == "-") {
			return true
		}
	}
	return false
}

// peersNote is the peer table's footnote on missing figures.
const peersNote = fewEventsNote + "; where neither side has a figure, the comparison is left out"

// WritePerEventTable prints, after bench's table, the watcher's CPU per
// event of the rate workloads by rate, and where this tool stands against
// each peer; nothing when no row has the figure. modes is what the bench
// says of its modes (result.RunInfo.Modes).
func WritePerEventTable(out io.Writer, results []result.Row, modes []result.Mode) error {
	t := newModeTable(modes)
	rows := append([]result.Row(nil), results...)
	sortResults(rows, t)
	tables, peers := perEventTables(rows, t), peerComparisons(rows, t)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, t := range tables {
		fmt.Fprintf(tw, "\n%s: watcher CPU per event, us (95%% interval)\n", t.Workload)
		fmt.Fprintf(tw, "MODE\t%s\n", strings.Join(t.Rates, "\t"))
		for _, r := range t.Rows {
			fmt.Fprintf(tw, "%s\t%s\n", r.Mode, strings.Join(r.Cells, "\t"))
		}
		for _, l := range t.Limits {
			fmt.Fprintf(tw, "  %s\n", l)
		}
		if t.Few {
			fmt.Fprintf(tw, "  %s\n", fewEventsNote)
		}
	}
	if len(tables) > 0 {
		fmt.Fprintf(tw, "  %s\n", notHeldNote)
	}
	if len(peers) > 0 {
		fmt.Fprintf(tw, "\nagainst the peers: watcher CPU per event (the watcher's processes and kauditd), this tool's over the peer's\n")
		fmt.Fprintf(tw, "WORKLOAD\tPEER\tUS/EVENT\tTRACER\tUS/EVENT\tRATIO\n")
		for _, c := range peers {
			ratio := c.Text()
			if c.Ratio > 0 && !c.Overlap {
				ratio = fmt.Sprintf("%.2fx", c.Ratio)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Workload, c.Peer, c.PeerCell, c.Tracer, c.TracerCell, ratio)
		}
		if peersFew(peers) {
			fmt.Fprintf(tw, "  %s\n", peersNote)
		}
	}
	return tw.Flush()
}

// perEventSVG draws a rate workload's CPU per event against rate: a line
// per mode across the rates (evenly spaced), a point where there is a
// figure, the scale from 0 to the largest.
func perEventSVG(t PerEventTable) htmltemplate.HTML {
	const w, h, left, right, top, bottom = 560, 260, 56, 150, 14, 34
	top0 := 0.0
	for _, r := range t.Rows {
		for _, v := range r.Values {
			top0 = math.Max(top0, v)
		}
	}
	if top0 <= 0 || len(t.Rates) == 0 {
		return ""
	}
	top0 *= 1.1
	x := func(i int) float64 {
		if len(t.Rates) == 1 {
			return left + (w-left-right)/2
		}
		return left + float64(i)*(w-left-right)/float64(len(t.Rates)-1)
	}
	y := func(v float64) float64 { return top + (h-top-bottom)*(1-v/top0) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="perevent" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s: watcher CPU per event in microseconds against the rate, per mode">`,
		w, h, w, h, htmltemplate.HTMLEscapeString(t.Workload))
	for _, f := range []float64{0, 0.25, 0.5, 0.75, 1} {
		v := top0 / 1.1 * f
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" font-size="11" text-anchor="end">%s</text>`,
			left, w-right, y(v), y(v), left-4, y(v)+4, usText(v))
	}
	fmt.Fprintf(&b, `<text x="12" y="%d" font-size="11" transform="rotate(-90 12 %d)" text-anchor="middle">µs per event</text>`, (h-bottom+top)/2, (h-bottom+top)/2)
	for i, r := range t.Rates {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle">%s</text>`, x(i), h-bottom+16, htmltemplate.HTMLEscapeString(r))
	}
	for k, r := range t.Rows {
		c := r.Color
		var pts []string
		for i, v := range r.Values {
			if v > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(v)))
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s %s: %s µs</title></circle>`,
					x(i), y(v), c, htmltemplate.HTMLEscapeString(r.Mode), t.Rates[i], usText(v))
			}
		}
		if len(pts) > 1 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, c, strings.Join(pts, " "))
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" font-size="11">%s</text>`,
			w-right+10, top+k*16, c, w-right+24, top+k*16+9, htmltemplate.HTMLEscapeString(r.Mode))
	}
	b.WriteString(`</svg>`)
	return htmltemplate.HTML(b.String())
}
