// SPDX-License-Identifier: Apache-2.0

package node

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tracer-dev/tracer/auditrules/cost"
)

// Report is what `tracer doctor` prints: the facts, a verdict per backend,
// the cost of the loaded audit rules and, given a bench result, the
// measured tax those rules put on every syscall.
type Report struct {
	Facts    Facts         `json:"facts"`
	Verdicts []Verdict     `json:"verdicts"`
	RuleCost *cost.Report  `json:"rule_cost,omitempty"`
	Tax      []MeasuredTax `json:"syscall_tax,omitempty"`
}

// MeasuredTax is the syscall-tax workload's ratio for one mode in a bench
// result: what every syscall that no rule names pays while the rules are
// loaded.
type MeasuredTax struct {
	Mode     string  `json:"mode"`  // auditd or audit
	Ratio    float64 `json:"ratio"` // median ratio of elapsed time to mode none
	Storage  string  `json:"storage,omitempty"`
	Source   string  `json:"source"`   // the bench result file
	Hostname string  `json:"hostname"` // the node the bench ran on
}

// NewReport judges f.
func NewReport(f Facts) *Report {
	r := &Report{Facts: f, Verdicts: Verdicts(f)}
	if f.Audit.RulesRead {
		rc := RuleCost(f)
		r.RuleCost = &rc
	}
	return r
}

// RuleCost analyses the node's loaded audit rules.
func RuleCost(f Facts) cost.Report {
	scanned := f.Procs.Scanned > 0 && (f.Procs.Unreadable == 0 || f.Root)
	return cost.AnalyzeText(strings.Join(f.Audit.Rules, "\n"), cost.Options{
		Machine:   f.Machine,
		Scanned32: scanned || f.Has32Bit(),
		Has32Bit:  f.Has32Bit(),
	})
}

func yesNo(b *bool) string {
	switch {
	case b == nil:
		return "unknown"
	case *b:
		return "yes"
	}
	return "no"
}

// WriteText prints the report for people: sections of aligned facts, the
// verdicts with their reasons, the rule findings.
func (r *Report) WriteText(w io.Writer) error {
	f := &r.Facts
	var b strings.Builder
	who := "not as root: some facts are unknown"
	if f.Root {
		who = "as root"
	}
	fmt.Fprintf(&b, "tracer doctor: %s (collected %s)\n", orDash(f.Hostname), who)

	section := func(title string, rows [][2]string) {
		fmt.Fprintf(&b, "\n%s\n", title)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, row := range rows {
			fmt.Fprintf(tw, "  %s\t%s\n", row[0], row[1])
		}
		tw.Flush()
	}

	osLine := orDash(f.OS.PrettyName)
	if f.OS.ID != "" {
		osLine += fmt.Sprintf(" [%s %s]", f.OS.ID, f.OS.VersionID)
	}
	cfg := f.KernelConfigSource
	if cfg == "" {
		cfg = "not found"
	}
	section("Node", [][2]string{
		{"OS", osLine},
		{"kernel", fmt.Sprintf("%s (%s)", orDash(f.Kernel), orDash(f.Machine))},
		{"kernel config", cfg},
	})

	a := f.Audit
	rows := [][2]string{{"compiled in", yesNo(a.Supported)}}
	if st := a.Status; st != nil {
		pid := "none"
		if st.PID != 0 {
			pid = fmt.Sprintf("%d (%s)", st.PID, orDash(st.PIDComm))
		}
		rows = append(rows,
			[2]string{"state", fmt.Sprintf("%s (enabled %d)", st.State(), st.Enabled)},
			[2]string{"audit PID", pid},
			[2]string{"backlog limit", fmt.Sprintf("%d (queued now %d)", st.BacklogLimit, st.Backlog)},
			[2]string{"backlog wait time", fmt.Sprintf("%d ticks", st.BacklogWaitTime)},
			[2]string{"lost (since boot)", fmt.Sprint(st.Lost)},
		)
	} else {
		rows = append(rows, [2]string{"state", "unknown (needs root)"})
	}
	if a.RulesRead {
		rows = append(rows, [2]string{"rules loaded", fmt.Sprintf("%d (%d with the tracer's key %q)", len(a.Rules), a.TracerRules, TracerKey)})
	} else {
		rows = append(rows, [2]string{"rules loaded", "unknown (needs root)"})
	}
	rows = append(rows, [2]string{"auditd running", yesNo(Bool(a.Auditd))})
	section("Audit", rows)

	e := f.EBPF
	tracefs := e.Tracefs
	if tracefs == "" {
		tracefs = "not mounted"
		if e.TracefsProbed {
			tracefs += " (looked in a private mount)"
		}
	}
	lockdown := f.LockdownText()
	intp := func(p *int) string {
		if p == nil {
			return "unknown"
		}
		return fmt.Sprint(*p)
	}
	section("eBPF", [][2]string{
		{"bpf syscall", yesNo(e.BPFSyscall)},
		{"BTF", yesNo(e.BTF) + " (/sys/kernel/btf/vmlinux)"},
		{"ring buffer", yesNo(e.RingBuf)},
		{"BTF tracepoints", yesNo(e.BTFTracepoints)},
		{"fentry", yesNo(e.Fentry)},
		{"syscall tracepoints", yesNo(e.SyscallTracepoints)},
		{"kprobes", yesNo(e.Kprobes)},
		{"tracefs", tracefs},
		{"lockdown", lockdown},
		{"unprivileged_bpf_disabled", intp(e.UnprivilegedBPF)},
		{"bpf_jit_enable", intp(e.JITEnabled)},
		{"transport", choice(e.RingBuf, "ringbuf", "perfbuf (no ring buffer: per-CPU buffers)")},
		{"attach", choice(e.BTFTracepoints, "tp_btf", "tracepoint (classic tracepoints; the process tree on raw_tp)")},
		{"global data", globalData(e)},
		{"BTF source", choice(e.BTF, "kernel (/sys/kernel/btf/vmlinux)", "none of the kernel's: pass --btf FILE (this kernel's BTF from BTFHub)")},
	})

	p := f.Procs
	bits := "none"
	if len(p.Bits32) > 0 {
		var names []string
		for i, pr := range p.Bits32 {
			if i == 3 {
				names = append(names, fmt.Sprintf("and %d more", len(p.Bits32)-3))
				break
			}
			names = append(names, fmt.Sprintf("%d %s", pr.PID, pr.Comm))
		}
		bits = fmt.Sprintf("%d: %s (audit rules need b32 copies)", len(p.Bits32), strings.Join(names, ", "))
	} else if p.Unreadable > 0 && !f.Root {
		// An unread executable may be 32-bit: no answer without root.
		bits = fmt.Sprintf("unknown: read %d of %d processes (the others are other users'; run as root)", p.Scanned, p.Scanned+p.Unreadable)
	} else if p.Scanned > 0 {
		bits = "none (b64 rules suffice)"
	}
	scan := fmt.Sprintf("%d processes", p.Scanned)
	if p.Unreadable > 0 {
		scan += fmt.Sprintf(", %d unreadable", p.Unreadable)
	}
	d := f.LogDisk
	disk := fmt.Sprintf("%s on %s (%s, %s, %s)", d.Path, orDash(d.Mount), orDash(d.FSType), orDash(d.Source), orDash(d.Device))
	kind := strings.ToUpper(d.Kind())
	if len(d.Disks) > 0 {
		kind += " (" + strings.Join(d.Disks, ", ") + ")"
	}
	section("Processes and disk", [][2]string{
		{"scanned", scan},
		{"32-bit processes", bits},
		{"audit log", disk},
		{"audit log disk", kind},
	})

	b.WriteString("\nVerdicts\n")
	for _, v := range r.Verdicts {
		fmt.Fprintf(&b, "  %-6s %s\n", v.Backend, strings.ToUpper(v.Status))
		for _, s := range v.Reasons {
			fmt.Fprintf(&b, "    - %s\n", s)
		}
		for _, s := range v.Notes {
			fmt.Fprintf(&b, "    note: %s\n", s)
		}
	}

	if rc := r.RuleCost; rc != nil {
		fmt.Fprintf(&b, "\nAudit rule cost (%d rules loaded, %d walked on every syscall)\n", len(rc.Rules), rc.ExitRules)
		if len(rc.Findings) == 0 {
			b.WriteString("  no findings\n")
		}
		for _, fd := range rc.Findings {
			fmt.Fprintf(&b, "  [%s] %s: %s\n", fd.Severity, fd.Kind, fd.Message)
			for i, rule := range fd.Rules {
				if i == 4 {
					fmt.Fprintf(&b, "      ... and %d more\n", len(fd.Rules)-4)
					break
				}
				fmt.Fprintf(&b, "      rule %d: %s\n", fd.Lines[i], rule)
			}
			if fd.Fix != "" {
				fmt.Fprintf(&b, "      fix: %s\n", fd.Fix)
			}
		}
	}
	if len(r.Tax) > 0 {
		b.WriteString("\nMeasured syscall tax (bench workload syscall-tax: a syscall no rule names)\n")
		for _, t := range r.Tax {
			st := ""
			if t.Storage != "" {
				st = ", " + t.Storage
			}
			fmt.Fprintf(&b, "  %-7s %.2fx: every syscall costs %+.0f%% with the rules loaded (%s on %s%s)\n",
				t.Mode, t.Ratio, (t.Ratio-1)*100, t.Source, orDash(t.Hostname), st)
		}
	}

	if len(f.NeedRoot) > 0 {
		b.WriteString("\nNot read without root\n")
		for _, s := range f.NeedRoot {
			fmt.Fprintf(&b, "  - %s\n", s)
		}
	}
	if len(f.Notes) > 0 {
		b.WriteString("\nProbe notes\n")
		for _, s := range f.Notes {
			fmt.Fprintf(&b, "  - %s\n", s)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// choice names what the eBPF backend chooses (--ebpf-transport and
// --ebpf-attach auto) from a probed fact: yes, no, or unknown without root.
func choice(have *bool, yes, no string) string {
	switch {
	case have == nil:
		return "unknown"
	case *have:
		return yes
	}
	return no
}

// globalData names how the eBPF backend's programs get their settings and
// share the ring's reader flag: mapped global data, or constants set at
// load (the ring's reader then polls; the perf buffer needs nothing shared).
func globalData(e EBPF) string {
	switch {
	case e.MmapData == nil || e.RingBuf == nil:
		return "unknown"
	case *e.MmapData && *e.RingBuf:
		return "mmap (constants set at load, the reader's flag in mapped .bss)"
	}
	return "constants (set at load; nothing mapped)"
}
