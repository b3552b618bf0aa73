// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/bench"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/bpfbackend"
	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/sink/schematest"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// The docs' command lines and the output they show are the tool's: every
// `tracer ...` line in a fenced block of README.md and docs/*.md names a
// command, flags of that command and values it takes; every line shown
// under a command in a ```console block has the shape tracer prints.
func TestDocsMatchTheTool(t *testing.T) {
	blocks := docBlocks(t)
	if len(blocks) == 0 {
		t.Fatal("no fenced blocks found in README.md and docs/*.md")
	}
	consoles := 0
	for _, b := range blocks {
		if b.lang == "console" {
			consoles++
		}
		for _, c := range b.commands() {
			if msg := checkDocCommand(t, c.args); msg != "" {
				t.Errorf("%s:%d: %s\n\t%s", b.file, c.line, msg, c.text)
			}
			if msg := checkBenchRounds(c); msg != "" {
				t.Errorf("%s:%d: %s\n\t%s", b.file, c.line, msg, c.text)
			}
		}
		if b.lang == "console" {
			for _, msg := range checkConsole(b) {
				t.Errorf("%s", msg)
			}
		}
	}
	if consoles == 0 {
		t.Fatal("no ```console blocks found")
	}
	for _, msg := range checkProseDefaults(t) {
		t.Error(msg)
	}
}

// proseDefault is a flag the prose gives with its default:
// "`--events exec,fork,signal,exit` (default `exec,fork,signal`".
var proseDefault = regexp.MustCompile("`--([a-z-]+)[ =][^`]*` \\(default:? `([^`]*)`")

// checkProseDefaults: a default the prose states is the flag's default on
// the commands that have the flag.
func checkProseDefaults(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob("../../docs/*.md")
	var msgs []string
	for _, f := range append([]string{"../../README.md"}, files...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(data)), " ")
		for _, m := range proseDefault.FindAllStringSubmatch(text, -1) {
			var defs []string
			for _, c := range newRootCmd().Commands() {
				if fl := c.Flags().Lookup(m[1]); fl != nil && !slices.Contains(defs, fl.DefValue) {
					defs = append(defs, fl.DefValue)
				}
			}
			if len(defs) > 0 && !slices.Contains(defs, m[2]) {
				msgs = append(msgs, fmt.Sprintf("%s: %q: the default of --%s is %q", strings.TrimPrefix(f, "../../"), m[0], m[1], strings.Join(defs, `" or "`)))
			}
		}
	}
	return msgs
}

// docBlock is one fenced block of a Markdown file.
type docBlock struct {
	file  string
	start int // line number of the first line inside the fence
	lang  string
	lines []string
}

func docBlocks(t *testing.T) []docBlock {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"../../README.md"}, files...)
	var out []docBlock
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(f, "../../")
		var cur *docBlock
		for i, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "```") {
				if cur == nil {
					cur = &docBlock{file: name, start: i + 2, lang: strings.TrimSpace(l[3:])}
				} else {
					out = append(out, *cur)
					cur = nil
				}
				continue
			}
			if cur != nil {
				cur.lines = append(cur.lines, l)
			}
		}
		if cur != nil {
			t.Errorf("%s: unclosed fence at line %d", name, cur.start-1)
		}
	}
	return out
}

// docCommand is one tracer command line of a block.
type docCommand struct {
	line    int
	text    string
	comment string   // a shell comment after it
	args    []string // after "tracer"
}

// roundsSaid is what a comment says of rounds: "5 rounds", "3 to 5 rounds".
var roundsSaid = regexp.MustCompile(`\b(\d+)(?: to (\d+))? rounds\b`)

// checkBenchRounds: a comment on a bench command without --rounds that
// says how many rounds it runs says what bench.Prepare does.
func checkBenchRounds(c docCommand) string {
	if len(c.args) == 0 || c.args[0] != "bench" || slices.Contains(c.args, "--rounds") {
		return ""
	}
	m := roundsSaid.FindStringSubmatch(c.comment)
	if m == nil {
		return ""
	}
	lo, hi := bench.DefaultMinRounds, bench.DefaultRounds
	if slices.Contains(c.args, "--quick") {
		lo, hi = bench.QuickMinRounds, bench.QuickRounds
	}
	if want := fmt.Sprintf("%d to %d rounds", lo, hi); m[0] != want {
		return fmt.Sprintf("says %q: this bench runs %s (adaptive: tracer bench --help, --rounds)", m[0], want)
	}
	return ""
}

// commandStart recognises a tracer command: "# tracer " and "$ tracer " in
// console blocks, "tracer " or "sudo tracer " in shell and plain blocks.
var commandStart = regexp.MustCompile(`^(?:[#$] |sudo )?tracer( |$)`)

// isCommand reports whether line i of a console block is a command.
func (b docBlock) isCommand(line string) bool {
	if b.lang == "console" {
		return strings.HasPrefix(line, "# tracer") || strings.HasPrefix(line, "$ tracer")
	}
	return commandStart.MatchString(strings.TrimSpace(line))
}

func (b docBlock) commands() []docCommand {
	if b.lang != "console" && b.lang != "sh" && b.lang != "" {
		return nil
	}
	var out []docCommand
	for i := 0; i < len(b.lines); i++ {
		if !b.isCommand(b.lines[i]) {
			continue
		}
		c := docCommand{line: b.start + i}
		text := strings.TrimSpace(b.lines[i])
		for strings.HasSuffix(text, `\`) && i+1 < len(b.lines) {
			i++
			text = strings.TrimSuffix(text, `\`) + " " + strings.TrimSpace(b.lines[i])
		}
		c.text = text
		if b.lang != "console" {
			comment := regexp.MustCompile(`\s+#\s.*$`)
			c.comment = comment.FindString(text)
			text = comment.ReplaceAllString(text, "")
		}
		words := shellWords(text)
		for len(words) > 0 && words[0] != "tracer" {
			words = words[1:] // the prompt, sudo
		}
		c.args = words[1:]
		out = append(out, c)
	}
	return out
}

// shellWords splits a command line as sh would, enough for the docs:
// quotes, and the end of the command at a redirection, pipe or list.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				j = len(s) - i - 1
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case (c == '>' || c == '|' || c == ';' || c == '&') && !inWord,
			c == '>' && (cur.String() == "2" || cur.String() == "1"):
			return words
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// checkDocCommand checks that args name a command, that each flag is one
// of that command's and that each value is one the command takes; it
// returns what is wrong, or "".
func checkDocCommand(t *testing.T, args []string) string {
	t.Helper()
	root := newRootCmd()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err.Error()
	}
	if cmd == root && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return fmt.Sprintf("no command %q", args[0])
	}
	flagArgs := rest
	if i := slices.Index(rest, "--"); i >= 0 {
		flagArgs = rest[:i]
	}
	if err := cmd.ParseFlags(flagArgs); err != nil {
		return fmt.Sprintf("tracer %s: %v", cmd.Name(), err)
	}
	var msgs []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if err := checkFlagValue(cmd, f.Name, f.Value.String()); err != nil {
			msgs = append(msgs, fmt.Sprintf("tracer %s --%s %s: %v", cmd.Name(), f.Name, f.Value, err))
		}
	})
	if len(msgs) > 0 {
		return strings.Join(msgs, "; ")
	}
	return runDocCommand(t, cmd, args)
}

// checkFlagValue checks a flag's value with the parser the command uses,
// or against the values the command completes for a flag of one value.
func checkFlagValue(cmd *cobra.Command, name, value string) error {
	var err error
	switch name {
	case "backend":
		_, err = newBackend(value)
	case "events":
		_, err = vocab.ParseTypes(value)
	case "signal":
		_, err = vocab.ParseSignals(value)
	case "probes":
		err = bpfbackend.CheckProbes(value)
	case "ebpf-transport":
		err = bpfbackend.CheckTransport(value)
	case "ebpf-attach":
		err = bpfbackend.CheckAttach(value)
	case "arch":
		err = auditrules.CheckArch(value)
	case "backpressure":
		_, err = tracer.ParseBackpressure(value)
	case "modes":
		for _, m := range strings.Split(value, ",") {
			m, st, ok := strings.Cut(m, "@")
			if ok && st != "ssd" && st != "hdd" {
				err = fmt.Errorf("mode %s: unknown storage %q", m, st)
			}
			if !slices.Contains(bench.ModeNames, m) {
				err = fmt.Errorf("unknown mode %q", m)
			}
		}
	case "workload":
		for _, w := range strings.Split(value, ",") {
			w, n, ok := strings.Cut(w, ":")
			if c, cerr := strconv.Atoi(n); ok && (cerr != nil || c < 1) {
				err = fmt.Errorf("workload %s: count %q is not a positive number", w, n)
			}
			if !slices.Contains(bench.Builtins(), w) && !slices.Contains(bench.Apps(), w) && w != "apps" && !bench.IsRate(w) {
				err = fmt.Errorf("unknown workload %q", w)
			}
		}
	case "time":
		_, err = sink.ParseTimeMode(value)
	case "format":
		if cmd.Name() == "watch" {
			_, err = sink.NewSink(value, io.Discard, sink.OutputOptions{})
			return err
		}
	}
	if err != nil {
		return err
	}
	if fn, ok := cmd.GetFlagCompletionFunc(name); ok {
		choices, dir := fn(cmd, nil, "")
		if dir&cobra.ShellCompDirectiveNoSpace == 0 && len(choices) > 0 && !slices.Contains(choices, value) {
			return fmt.Errorf("not one of %s", strings.Join(choices, ", "))
		}
	}
	return nil
}

// runDocCommand runs what can run as nobody and fail fast on bad input:
// watch and trace check every flag before they find they are not root;
// rules runs; report checks --format before its files.
func runDocCommand(t *testing.T, cmd *cobra.Command, args []string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return "" // the flags were checked in-process
	}
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	switch cmd.Name() {
	case "watch", "trace":
		code, _, stderr := runAsWithin(t, nobody, 20*time.Second, args...)
		if code != 2 || !strings.Contains(stderr, "needs root") && !strings.Contains(stderr, "no such process") {
			return fmt.Sprintf("as non-root: exit %d, %q (want the refusal for not being root: every flag accepted)", code, stderr)
		}
	case "rules":
		if code, _, stderr := runAsWithin(t, nobody, 20*time.Second, args...); code != 0 {
			return fmt.Sprintf("exit %d: %s", code, stderr)
		}
	case "report":
		if f := cmd.Flags().Lookup("format"); f.Changed {
			code, _, stderr := runAsWithin(t, nobody, 20*time.Second, "report", "--format", f.Value.String())
			if code != 2 || !strings.Contains(stderr, "no result file given") {
				return fmt.Sprintf("report --format %s: exit %d, %q", f.Value, code, stderr)
			}
		}
	}
	return ""
}

func runAsWithin(t *testing.T, cred *syscall.Credential, limit time.Duration, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, tracerBin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("tracer %q did not end within %v", args, limit)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stdout.String(), stderr.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, stdout.String(), stderr.String()
}

// The lines tracer prints, from watch.go, common.go, tracer.TextHeader,
// Stats.LossSummary and FilterSummary, TraceReport.WriteTable.
var (
	noteLine    = regexp.MustCompile(`^tracer: note: \S.*$`)
	bannerLine  = regexp.MustCompile(`^tracer: watching (\S+) events with the (\S+) backend \((Ctrl-C to stop|for (\S+); Ctrl-C stops sooner)\)$`)
	execCalls   = regexp.MustCompile(`^@exec_calls\[[^,\]]+, [^\]]+\]: (\d+)$`)
	forkCalls   = regexp.MustCompile(`^@fork_calls\[[^\]]+\]: (\d+)$`)
	signalCalls = regexp.MustCompile(`^@signals\[\S+ -> -?\d+, SIG[A-Z0-9+]+\]: (\d+)$`)
	totalLine   = regexp.MustCompile(`^total: exec (\d+)  fork (\d+)  signal (\d+)(?:  exit \d+)?  lost \d+$`)
	elapsedLine = regexp.MustCompile(`^elapsed \d+\.\d\ds  user \d+\.\d\ds  sys \d+\.\d\ds  cpu \d+%$`)
	// elision: a line standing for lines left out.
	elision = regexp.MustCompile(`^(\.\.\.|…)$`)

	execDetails   = regexp.MustCompile(`^ppid=\d+ ret=\S+ \S.*$`)
	forkDetails   = regexp.MustCompile(`^\S+ -> \d+$`)
	signalDetails = regexp.MustCompile(`^(\S+) -> -?\d+ SIG[A-Z0-9+]+(?: ret=\S+)?(?: \((.+)\))?$`)
	exitDetails   = regexp.MustCompile(`^(?:code=-?\d+|killed by SIG[A-Z0-9+]+(?: from oom-killer| \(\S+\) from the kernel| from \S+ \(pid \d+\)(?: via \S+)?)?(?:, core dumped)?)$`)
)

// summaryRe is watch's exit summary, its stages and reasons named by the
// code; template says it in words.
func summaryRe() (re *regexp.Regexp, template string) {
	var lost, filtered, lostT, filteredT []string
	for s := tracer.LossStage(0); s < tracer.NumLossStages; s++ {
		lost = append(lost, regexp.QuoteMeta(s.String())+` (?:>=)?\d+`)
		lostT = append(lostT, s.String()+" N")
	}
	for r := vocab.FilterReason(0); r < vocab.NumNoiseReasons; r++ {
		filtered = append(filtered, regexp.QuoteMeta(r.String())+` \d+`)
		filteredT = append(filteredT, r.String()+" N")
	}
	re = regexp.MustCompile(`^tracer: \d+ events seen, (?:>=)?\d+ lost \(` + strings.Join(lost, ", ") +
		`\), \d+ filtered as runtime noise \(` + strings.Join(filtered, ", ") + `\)$`)
	template = "tracer: N events seen, N lost (" + strings.Join(lostT, ", ") + "), N filtered as runtime noise (" + strings.Join(filteredT, ", ") + ")"
	return re, template
}

// resultRe matches a signal result as the text format names it.
func resultRe() *regexp.Regexp {
	var names []string
	for r := vocab.ResultDelivered; r <= vocab.ResultLoseInfo; r++ {
		names = append(names, regexp.QuoteMeta(r.String()))
	}
	return regexp.MustCompile(`(^|, )(` + strings.Join(names, "|") + `)(, |$)`)
}

// checkConsole checks the lines shown under each command of a console block.
func checkConsole(b docBlock) []string {
	var msgs []string
	for i := 0; i < len(b.lines); {
		if strings.TrimSpace(b.lines[i]) == "" {
			i++
			continue
		}
		if !b.isCommand(b.lines[i]) {
			msgs = append(msgs, fmt.Sprintf("%s:%d: output with no command above it: %q", b.file, b.start+i, b.lines[i]))
			i++
			continue
		}
		at := i
		args := shellWords(strings.TrimSpace(b.lines[i]))[2:]
		i++
		var out []string
		for i < len(b.lines) && strings.TrimSpace(b.lines[i]) != "" && !b.isCommand(b.lines[i]) {
			out = append(out, b.lines[i])
			i++
		}
		root := newRootCmd()
		cmd, rest, err := root.Find(args)
		if err != nil {
			continue // reported with the command
		}
		flagArgs := rest
		if j := slices.Index(rest, "--"); j >= 0 {
			flagArgs = rest[:j]
		}
		if cmd.ParseFlags(flagArgs) != nil {
			continue
		}
		var errs []string
		switch cmd.Name() {
		case "watch":
			errs = checkWatchOutput(cmd, out)
		case "trace":
			errs = checkTraceOutput(out)
		default:
			errs = []string{fmt.Sprintf("no shapes known for the output of tracer %s: add them to doc_test.go", cmd.Name())}
		}
		for _, e := range errs {
			msgs = append(msgs, fmt.Sprintf("%s:%d: %s", b.file, b.start+at, e))
		}
	}
	return msgs
}

func flagString(cmd *cobra.Command, name string) string {
	f := cmd.Flags().Lookup(name)
	if f == nil {
		return ""
	}
	return f.Value.String()
}

// checkWatchOutput: notes, the banner, then the header and events (text)
// or JSON lines, ^C, and the summary last.
func checkWatchOutput(cmd *cobra.Command, out []string) []string {
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	format := flagString(cmd, "format")
	backend := flagString(cmd, "backend")
	types, _ := vocab.ParseTypes(flagString(cmd, "events"))
	if cmd.Flags().Lookup("target").Changed {
		types = tracer.TargetTypes
	}
	if cmd.Flags().Lookup("exe").Changed {
		types, _ = vocab.ParseTypes("exec")
	}
	sigs, _ := vocab.ParseSignals(flagString(cmd, "signal"))
	execFailures := flagString(cmd, "exec-failures") == "true"
	probes := flagString(cmd, "probes")
	schedSet := backend == "ebpf" && (probes == "sched" || probes == "default" &&
		!(execFailures && types.Has(vocab.TypeExec)) && !(sigs.KeepsNoise(vocab.FilteredExistence) && types.Has(vocab.TypeSignal)))
	timeFlag := flagString(cmd, "time")
	quiet := flagString(cmd, "quiet") == "true"
	summary, summaryText := summaryRe()
	results := resultRe()

	const (
		notes = iota
		events
		ended
	)
	state, header, banner := notes, false, false
	for _, l := range out {
		switch {
		case noteLine.MatchString(l) && state == notes && !banner:
		case bannerLine.MatchString(l):
			m := bannerLine.FindStringSubmatch(l)
			if banner || state != notes {
				bad("banner not first: %q", l)
			}
			banner = true
			if types != 0 && m[1] != types.String() {
				bad("banner says %s events, the command watches %s: %q", m[1], types, l)
			}
			if m[2] != backend {
				bad("banner says the %s backend, the command asks for %s: %q", m[2], backend, l)
			}
			if d := flagString(cmd, "duration"); d != "0s" && m[4] != d || d == "0s" && m[4] != "" {
				bad("banner says %q, the command's --duration is %s", m[3], d)
			}
		case summary.MatchString(l):
			if state == ended {
				bad("two summaries: %q", l)
			}
			state = ended
		case l == "^C":
			if state == ended {
				bad("^C after the summary")
			}
		case elision.MatchString(l):
		case strings.HasPrefix(l, "tracer: "):
			bad("not a line tracer prints (its summary reads %q): %q", summaryText, l)
		case state == ended:
			bad("output after the summary: %q", l)
		case format == "ecs" || format == "ocsf":
			validate := schematest.ECS
			if format == "ocsf" {
				validate = schematest.OCSF
			}
			if err := validate([]byte(l)); err != nil {
				bad("not a %s document: %v: %q", format, err, l)
			}
			state = events
		case format == "json":
			var v map[string]any
			if err := json.Unmarshal([]byte(l), &v); err != nil || v["type"] == nil {
				bad("not a JSON event line: %q", l)
			}
			state = events
		case strings.HasPrefix(l, "TIME ") || strings.HasPrefix(l, "BACKEND "):
			if header || state != notes {
				bad("header not before the events: %q", l)
			}
			if want := strings.TrimSuffix(sink.TextHeader, "\n"); timeFlag == "clock" && l != want {
				bad("header %q, tracer prints %q", l, want)
			}
			header = true
		default:
			state = events
			if !header {
				bad("event line before the header: %q", l)
			}
			if msg := checkTextEvent(l, timeFlag, backend, schedSet, results); msg != "" {
				bad("%s: %q", msg, l)
			}
		}
	}
	if !quiet && !banner {
		bad("no banner (tracer: watching ... events with the ... backend (...))")
	}
	if !quiet && state != ended && len(out) > 0 {
		bad("no summary line, or not last; tracer prints %q", summaryText)
	}
	return errs
}

// checkTextEvent checks a text event line's columns (tracer.TextHeader:
// TIME 12, BACKEND 7, TYPE 6, PID 7, COMM 16, UID 10) and its details.
func checkTextEvent(l, timeFlag, backend string, schedSet bool, results *regexp.Regexp) string {
	if timeFlag != "clock" {
		return "" // other time columns: not in the docs' examples
	}
	if len(l) < 65 {
		return "shorter than the columns"
	}
	cols := []struct {
		from, to int
		re       string
	}{
		{0, 12, `^\d\d:\d\d:\d\d\.\d{3}$`},
		{13, 20, `^(audit|ebpf) *$`},
		{21, 27, `^(exec|fork|signal|exit) *$`},
		{28, 35, `^\d+ *$`},
		{36, 52, `^\S.*$`},
		{53, 63, `^\d+ *$`},
	}
	for _, c := range cols {
		if l[c.to] != ' ' || !regexp.MustCompile(c.re).MatchString(l[c.from:c.to]) {
			return fmt.Sprintf("column %d-%d %q is not where TextHeader puts it", c.from, c.to, l[c.from:c.to])
		}
	}
	if b := strings.TrimSpace(l[13:20]); b != backend {
		return "backend column " + b + ", the command asks for " + backend
	}
	details := l[64:]
	switch strings.TrimSpace(l[21:27]) {
	case "exec":
		if !execDetails.MatchString(details) {
			return "not an exec's details (ppid=N ret=R FILE ARGV)"
		}
	case "fork":
		if !forkDetails.MatchString(details) {
			return "not a fork's details (SYSCALL -> CHILD)"
		}
	case "signal":
		m := signalDetails.FindStringSubmatch(details)
		if m == nil {
			return "not a signal's details (SYSCALL -> PID SIGNAME ret=R (CODE, RESULT, to COMM))"
		}
		if m[1] != "kernel" && m[1] != "pidfd_send_signal" && !strings.HasPrefix(m[2], "SI_") {
			return "a signal sent by " + m[1] + " has its si_code (SI_USER...) first in parentheses"
		}
		if schedSet && !results.MatchString(m[2]) {
			return "the eBPF sched set knows what the kernel did with a signal: (CODE, RESULT, to COMM)"
		}
	case "exit":
		if !exitDetails.MatchString(details) {
			return "not an exit's details (code=N, or killed by SIGNAL from ...)"
		}
	}
	return ""
}

// checkTraceOutput: the command's own output, then the counts, the
// totals and the rusage line; without an elision the counts add up to the
// totals.
func checkTraceOutput(out []string) []string {
	var errs []string
	report, elided, sawTotal, sawElapsed := false, false, false, false
	var exec, fork, signal uint64
	add := func(p *uint64, s string) { n, _ := strconv.ParseUint(s, 10, 64); *p += n }
	for _, l := range out {
		switch {
		case execCalls.MatchString(l):
			add(&exec, execCalls.FindStringSubmatch(l)[1])
			report = true
		case forkCalls.MatchString(l):
			add(&fork, forkCalls.FindStringSubmatch(l)[1])
			report = true
		case signalCalls.MatchString(l):
			add(&signal, signalCalls.FindStringSubmatch(l)[1])
			report = true
		case elision.MatchString(l):
			elided = true
		case totalLine.MatchString(l):
			m := totalLine.FindStringSubmatch(l)
			sawTotal, report = true, true
			if !elided && (m[1] != strconv.FormatUint(exec, 10) || m[2] != strconv.FormatUint(fork, 10) || m[3] != strconv.FormatUint(signal, 10)) {
				errs = append(errs, fmt.Sprintf("the counts shown (exec %d, fork %d, signal %d) do not add up to %q: show the rest or elide them with ...", exec, fork, signal, l))
			}
		case elapsedLine.MatchString(l):
			if !sawTotal {
				errs = append(errs, "elapsed before total: "+l)
			}
			sawElapsed = true
		case report:
			errs = append(errs, fmt.Sprintf("not a line of trace's report (@exec_calls, @fork_calls, @signals, total, elapsed): %q", l))
		}
	}
	if !sawTotal || !sawElapsed {
		errs = append(errs, "no total: and elapsed lines")
	}
	return errs
}

// README.md and docs/overhead.md say exactly what make demo runs: the
// bench command its DEMO_FLAGS make, and the workloads and modes in it.
func TestDemoDocumented(t *testing.T) {
	flags, vars := tracertest.DemoFlags(t, "../../Makefile")
	want := "tracer bench " + flags
	for _, f := range []string{"../../README.md", "../../docs/overhead.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(strings.ReplaceAll(string(b), "\\\n", " ")), " ")
		if !strings.Contains(text, want) {
			t.Errorf("%s does not show the demo's command: %s", strings.TrimPrefix(f, "../../"), want)
		}
	}
	// The section that explains it names every workload and mode in it.
	b, _ := os.ReadFile("../../docs/overhead.md")
	doc := string(b)
	i := strings.Index(doc, "## The demo")
	if i < 0 {
		t.Fatal("docs/overhead.md has no section '## The demo'")
	}
	section := doc[i:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	for _, list := range []string{vars["DEMO_WORKLOADS"], vars["DEMO_MODES"]} {
		for _, name := range strings.Split(list, ",") {
			name, _, _ = strings.Cut(name, ":")
			name, _, _ = strings.Cut(name, "@")
			if !strings.Contains(section, "`"+name+"`") {
				t.Errorf("docs/overhead.md's demo section does not explain `%s`", name)
			}
		}
	}
}
