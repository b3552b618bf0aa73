// SPDX-License-Identifier: Apache-2.0

package report

import (
	"regexp"
	"sort"
	"strings"

	"github.com/tracer-dev/tracer/bench/result"
)

// modeTable is what the result files say of their modes (run.modes), by
// name: the report orders, pairs and colours modes from it alone, so a
// mode bench gains needs nothing here.
type modeTable struct {
	modes map[string]result.Mode
	// order is each known mode's place in the report.
	order map[string]int
}

// defaultColor draws a mode whose file gives it no colour.
const defaultColor = "#8e7cc3"

// hexColor is the one form of colour taken from a file: the report puts it
// in SVG and CSS as it is.
var hexColor = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

// newModeTable merges what each file says of its modes, the first file's
// word first. A list that is empty (a file of an earlier tracer) stands for
// legacyModes.
func newModeTable(lists ...[]result.Mode) *modeTable {
	t := &modeTable{modes: map[string]result.Mode{}, order: map[string]int{}}
	for _, l := range lists {
		if len(l) == 0 {
			l = legacyModes
		}
		for _, m := range l {
			if _, ok := t.modes[m.Name]; ok || m.Name == "" {
				continue
			}
			if !hexColor.MatchString(m.Color) {
				m.Color = ""
			}
			t.modes[m.Name] = m
		}
	}
	t.order = t.readingOrder()
	return t
}

// fileModes is what f says of its modes; nil for a file of an earlier
// tracer.
func fileModes(f *result.File) []result.Mode {
	if f == nil || f.Run == nil {
		return nil
	}
	return f.Run.Modes
}

// readingOrder puts the modes in the order readers compare them: each mode
// of this tool (in the bench's rank) followed by its floor, the floors of
// the modes read beside it, then those modes (its variants and the peers
// whose counterpart it is), each group in rank order.
func (t *modeTable) readingOrder() map[string]int {
	names := make([]string, 0, len(t.modes))
	for n := range t.modes {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return t.before(names[i], names[j]) })
	// flooredBy is the first mode (in rank) that names a mode its floor.
	flooredBy := map[string]string{}
	for _, n := range names {
		if f := t.modes[n].Floor; f != "" && flooredBy[f] == "" && f != n {
			flooredBy[f] = n
		}
	}
	head := func(n string) (string, int) {
		role := 0
		if by, ok := flooredBy[n]; ok && t.modes[n].Counterpart == "" {
			n, role = by, 1
		}
		// One step: a counterpart is a mode of this tool, read beside
		// nothing else (a file that chains them gets each link alone).
		if c, ok := t.modes[t.modes[n].Counterpart]; ok && c.Counterpart == "" {
			n = c.Name
			if role == 0 {
				role = 2
			}
		}
		return n, role
	}
	type key struct {
		head string
		role int
	}
	keys := map[string]key{}
	for _, n := range names {
		h, role := head(n)
		keys[n] = key{h, role}
	}
	sort.SliceStable(names, func(i, j int) bool {
		a, b := keys[names[i]], keys[names[j]]
		if a.head != b.head {
			return t.before(a.head, b.head)
		}
		return a.role < b.role // then rank: names is in rank order
	})
	order := make(map[string]int, len(names))
	for i, n := range names {
		order[n] = i
	}
	return order
}

// before orders two known modes by rank, then name.
func (t *modeTable) before(a, b string) bool {
	if ra, rb := t.modes[a].Rank, t.modes[b].Rank; ra != rb {
		return ra < rb
	}
	return a < b
}

// rank is mode's place in the report; modes no file describes go last.
func (t *modeTable) rank(mode string) int {
	if r, ok := t.order[mode]; ok {
		return r
	}
	return len(t.order)
}

// color is the colour of mode's bars and lines.
func (t *modeTable) color(mode string) string {
	if c := t.modes[mode].Color; c != "" {
		return c
	}
	return defaultColor
}

// isFloor reports whether mode is a floor: the kernel's own cost, with no
// watcher whose CPU could be counted. A file of an earlier tracer may not
// name it a floor, hence the name.
func (t *modeTable) isFloor(mode string) bool {
	if strings.Contains(mode, "-floor") {
		return true
	}
	for _, m := range t.modes {
		if m.Floor == mode {
			return true
		}
	}
	return false
}

// counterpart is the mode of this tool a peer is compared with, or "".
func (t *modeTable) counterpart(mode string) string {
	if m := t.modes[mode]; m.Peer {
		return m.Counterpart
	}
	return ""
}

// headlineModes are the modes the headline and its ranking set side by
// side, those present in a file: this tool's two backends and the audit
// daemons a reader weighs them against. Every other mode stays in the
// tables, ordered and coloured from the file.
var headlineModes = []string{"audit", "ebpf", "auditd", "laurel"}

// diskModes are the modes whose cost the log's disk can change (auditd
// writes every record, in each flush mode, and laurel's auditd too): the
// headline gives each one's SSD against HDD.
var diskModes = []string{"auditd", "auditd-incremental", "auditd-sync", "auditd-data", "laurel"}

// legacyModes is, for result files of earlier tracers only (no run.modes),
// what their modes were as bench then registered them. Files that say what
// their modes are never read it; a mode added since needs no line here.
var legacyModes = []result.Mode{
	{Name: "none", Rank: 0, Color: "#7a8ca3"},
	{Name: "audit", Rank: 10, Floor: "audit-floor", Color: "#e08a2c"},
	{Name: "audit-floor", Rank: 20, Color: "#f2c189"},
	{Name: "audit-floor-classic", Rank: 21, Color: "#f7d9b0"},
	{Name: "ebpf", Rank: 30, Floor: "ebpf-floor", Color: "#2f6fb0"},
	{Name: "ebpf-floor", Rank: 40, Color: "#9fc2e4"},
	{Name: "ebpf-syscalls", Rank: 50, Counterpart: "ebpf", Color: "#5aa0d8"},
	{Name: "ebpf-exec", Rank: 55, Color: "#1d4f80"},
	{Name: "auditd", Rank: 60, Peer: true, Floor: "audit-floor-classic", Counterpart: "audit", Color: "#c0392b"},
	{Name: "auditd-incremental", Rank: 61, Peer: true, Floor: "audit-floor-classic", Counterpart: "audit"},
	{Name: "auditd-sync", Rank: 62, Peer: true, Floor: "audit-floor-classic", Counterpart: "audit", Color: "#8e2418"},
	{Name: "auditd-data", Rank: 63, Peer: true, Floor: "audit-floor-classic", Counterpart: "audit", Color: "#d4634f"},
	{Name: "laurel", Rank: 65, Peer: true, Floor: "audit-floor-classic", Counterpart: "audit", Color: "#a0522d"},
	{Name: "bpftrace", Rank: 70, Peer: true, Counterpart: "ebpf", Color: "#3c9d5d"},
	{Name: "libbpf-tools", Rank: 80, Peer: true, Counterpart: "ebpf", Color: "#6bbf59"},
	{Name: "execsnoop", Rank: 85, Peer: true, Counterpart: "ebpf-exec", Color: "#2e7d32"},
}
