// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// marker starts every line the guest's init writes about the run, so that
// neither a test's output nor the kernel's can be taken for one.
const marker = "TRACER-GUEST "

// binRun is one test binary's run in the guest, as its console told it.
type binRun struct {
	Name             string
	Started, Ended   bool
	Status           int
	Passed, Failed   []string // top-level tests
	Skipped          []string
	SubPassed        int // subtests
	SubFailed        []string
	SubSkipped       []string
	NoTests, Panic   bool
	TimedOut, Killed bool
}

// console is what a guest's serial console said.
type console struct {
	Kernel string // uname -r in the guest, from its KERNEL marker
	CPUs   string
	Notes  []string // NOTE markers: a mount that failed, say
	Runs   []*binRun
	Done   bool   // the DONE marker: init reached its end
	Oops   string // the first line of a kernel panic or oops, if any
}

// parseConsole reads a guest's console output.
func parseConsole(r io.Reader) (*console, error) {
	c := &console{}
	var cur *binRun
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if i := strings.Index(line, marker); i >= 0 {
			// A kernel message may have been written into the same line
			// before the marker: what follows the marker is the init's.
			f := strings.Fields(line[i+len(marker):])
			if len(f) == 0 {
				continue
			}
			switch {
			case f[0] == "KERNEL" && len(f) >= 2:
				c.Kernel = f[1]
				if len(f) >= 4 && f[2] == "cpus" {
					c.CPUs = f[3]
				}
			case f[0] == "NOTE":
				c.Notes = append(c.Notes, strings.Join(f[1:], " "))
			case f[0] == "START" && len(f) == 2:
				cur = &binRun{Name: f[1], Started: true}
				c.Runs = append(c.Runs, cur)
			case f[0] == "END" && len(f) == 3:
				if cur == nil || cur.Name != f[1] {
					return c, fmt.Errorf("END marker of %s without its START", f[1])
				}
				st, err := strconv.Atoi(f[2])
				if err != nil {
					return c, fmt.Errorf("END marker of %s: status %q", f[1], f[2])
				}
				cur.Ended, cur.Status = true, st
				cur = nil
			case f[0] == "DONE":
				c.Done = true
			}
			continue
		}
		if c.Oops == "" && (strings.Contains(line, "Kernel panic") || strings.Contains(line, "BUG: ") || strings.Contains(line, "Oops: ")) {
			c.Oops = strings.TrimSpace(line)
		}
		if cur == nil {
			continue
		}
		// go test -v: "--- PASS: TestX (0.01s)", subtests indented by four
		// spaces a level.
		trimmed := strings.TrimLeft(line, " ")
		sub := len(trimmed) < len(line)
		for _, res := range []string{"PASS", "FAIL", "SKIP"} {
			rest, ok := strings.CutPrefix(trimmed, "--- "+res+": ")
			if !ok {
				continue
			}
			name, _, _ := strings.Cut(rest, " ")
			switch {
			case res == "PASS" && sub:
				cur.SubPassed++
			case res == "PASS":
				cur.Passed = append(cur.Passed, name)
			case res == "FAIL" && sub:
				cur.SubFailed = append(cur.SubFailed, name)
			case res == "FAIL":
				cur.Failed = append(cur.Failed, name)
			case sub:
				cur.SubSkipped = append(cur.SubSkipped, name)
			default:
				cur.Skipped = append(cur.Skipped, name)
			}
		}
		switch {
		case strings.HasPrefix(line, "testing: warning: no tests to run"):
			cur.NoTests = true
		case strings.HasPrefix(line, "panic: test timed out"):
			cur.TimedOut = true
		case strings.HasPrefix(line, "panic: "):
			cur.Panic = true
		}
	}
	return c, sc.Err()
}

// problems says what makes the guest's run a failure, for the runs named
// in want: a run missing or cut short (no END: the guest hung or died), a
// binary that failed or ran no test, a top-level test skipped (the guest
// is built to have everything; allowSkip lets it), no DONE marker.
func (c *console) problems(want []string, allowSkip bool) []string {
	var out []string
	if c.Kernel == "" {
		out = append(out, "no KERNEL marker: the guest's init never ran")
	}
	if c.Oops != "" {
		out = append(out, "the kernel said: "+c.Oops)
	}
	runs := map[string]*binRun{}
	for _, r := range c.Runs {
		if runs[r.Name] != nil {
			out = append(out, r.Name+": started twice")
		}
		runs[r.Name] = r
	}
	for _, name := range want {
		r := runs[name]
		switch {
		case r == nil:
			out = append(out, name+": no START marker: never ran")
			continue
		case !r.Ended:
			out = append(out, name+": no END marker: the guest hung or died while it ran")
			continue
		case r.TimedOut:
			out = append(out, name+": the test binary's -test.timeout ran out")
		case r.Panic:
			out = append(out, name+": a test panicked")
		}
		if r.Status != 0 {
			out = append(out, fmt.Sprintf("%s: exit status %d", name, r.Status))
		}
		for _, f := range r.Failed {
			out = append(out, name+": "+f+" failed")
		}
		for _, f := range r.SubFailed {
			if !hasParent(f, r.Failed) {
				out = append(out, name+": "+f+" failed")
			}
		}
		if r.NoTests || len(r.Passed)+len(r.Failed)+len(r.Skipped) == 0 {
			out = append(out, name+": no test ran: its -test.run pattern matches none")
		}
		if !allowSkip {
			for _, s := range r.Skipped {
				out = append(out, name+": "+s+" skipped (see the log for why)")
			}
		}
		if r.Status == 0 && len(r.Failed)+len(r.SubFailed) > 0 {
			out = append(out, name+": tests failed but the binary exited 0")
		}
	}
	if !c.Done {
		out = append(out, "no DONE marker: the guest's init did not reach its end")
	}
	return out
}

// hasParent tells whether sub's top-level test is in tops (whose failure
// is already said).
func hasParent(sub string, tops []string) bool {
	top, _, _ := strings.Cut(sub, "/")
	for _, t := range tops {
		if t == top {
			return true
		}
	}
	return false
}

// summary is one line per binary: how many tests passed, failed, skipped.
func (r *binRun) summary() string {
	total := len(r.Passed) + len(r.Failed) + len(r.Skipped)
	s := fmt.Sprintf("%s %d/%d passed", r.Name, len(r.Passed), total)
	if n := r.SubPassed + len(r.SubFailed) + len(r.SubSkipped); n > 0 {
		s += fmt.Sprintf(" (subtests %d/%d", r.SubPassed, n)
		if len(r.SubSkipped) > 0 {
			s += fmt.Sprintf(", %d skipped", len(r.SubSkipped))
		}
		s += ")"
	}
	if len(r.Skipped) > 0 {
		s += fmt.Sprintf(", %d skipped", len(r.Skipped))
	}
	if len(r.Failed) > 0 {
		s += ", failed: " + strings.Join(r.Failed, " ")
	}
	if !r.Ended {
		s += ", cut short"
	}
	return s
}
