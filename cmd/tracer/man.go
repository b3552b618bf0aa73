// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/tracer-dev/tracer/tracer/sink"
)

// newManCmd is the hidden step `make man` runs: tracer(8) and a page per
// command, from the commands' own help, so that they cannot disagree.
func newManCmd() *cobra.Command {
	return &cobra.Command{
		Use:          "man DIR",
		Short:        "Write the man pages, tracer(8) and tracer-COMMAND(8), to DIR",
		Hidden:       true,
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return fmt.Errorf("making the man page directory: %w", err)
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true
			return writeManPages(root, args[0])
		},
	}
}

// writeManPages writes the page of cmd and of each command below it that
// users run, as doc.GenManTree does, with the sections cobra has no field
// for (manSections).
func writeManPages(cmd *cobra.Command, dir string) error {
	for _, c := range cmd.Commands() {
		if !c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() {
			continue
		}
		if err := writeManPages(c, dir); err != nil {
			return err
		}
	}
	// No Title: cobra then titles each page by its command, TRACER-WATCH.
	var buf bytes.Buffer
	if err := doc.GenMan(cmd, &doc.GenManHeader{
		Section: "8", Source: "tracer " + version, Manual: "System Administration",
	}, &buf); err != nil {
		return fmt.Errorf("writing the man page of %s: %w", cmd.CommandPath(), err)
	}
	page := addManSections(buf.String(), manSections(cmd))
	name := strings.ReplaceAll(cmd.CommandPath(), " ", "-") + ".8"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(page), 0o644); err != nil {
		return fmt.Errorf("writing the man page: %w", err)
	}
	return nil
}

// manSection is a section in md2man's Markdown; before says which of
// cobra's sections it goes before.
type manSection struct {
	before string // "OPTIONS", "EXAMPLE" (cobra's name) or "SEE ALSO"
	md     string
}

// addManSections puts the sections in the roff page cobra wrote, in the
// order of man-pages(7): OUTPUT after DESCRIPTION, EXIT STATUS,
// ENVIRONMENT and FILES before EXAMPLES.
func addManSections(page string, secs []manSection) string {
	for _, s := range secs {
		at := strings.Index(page, "\n.SH "+s.before+"\n")
		if at < 0 && s.before == "EXAMPLE" {
			at = strings.Index(page, "\n.SH SEE ALSO\n")
		}
		if at < 0 {
			at = len(page) - 1
		}
		// md2man renders a whole page: a title first, cut off here.
		roff := string(md2man.Render([]byte("% X\n\n" + s.md)))
		if i := strings.Index(roff, "\n.SH "); i >= 0 {
			roff = roff[i:]
		}
		page = page[:at] + strings.TrimRight(roff, "\n") + page[at:]
	}
	return strings.Replace(page, "\n.SH EXAMPLE\n", "\n.SH EXAMPLES\n", 1)
}

// Exit statuses as run (root.go) maps errors to them.
const (
	exitOK    = "**0**\n: the command did what was asked.\n\n"
	exitFail  = "**1**\n: it failed on the node (a kernel refusal, a write that failed); the message on stderr says why.\n\n"
	exitUsage = "**2**\n: bad input the user can fix (an unknown flag or value, not root, audit locked by **-e 2**): one line on stderr says what to do, and nothing is left installed.\n\n"
)

// Environment variables tracer reads, and the files its package installs
// (deploy/package/nfpm.yaml).
const (
	envSudo = "**SUDO_UID**, **SUDO_GID**\n: a file written as root under sudo (**report -o**, **bench -o**) is given to the user who ran sudo.\n\n"
	envOTLP = "**OTEL_EXPORTER_OTLP_HEADERS**, **OTEL_EXPORTER_OTLP_CERTIFICATE**, **OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE**, **OTEL_EXPORTER_OTLP_CLIENT_KEY**, **OTEL_EXPORTER_OTLP_COMPRESSION** (and the same for logs alone, e.g. **OTEL_EXPORTER_OTLP_LOGS_HEADERS**)\n" +
		": with **--output otlp://**, as in any OpenTelemetry SDK; **--output** names the endpoint, so **OTEL_EXPORTER_OTLP_ENDPOINT** is not read.\n\n" +
		"**OTEL_RESOURCE_ATTRIBUTES**, **OTEL_SERVICE_NAME**\n: with **--output otlp://**, add to or override the resource tracer sends (service.name tracer, host.name).\n\n"
	envGOMAXPROCS = "**GOMAXPROCS**\n: **watch --backend ebpf** runs its Go code on one thread unless it is set.\n\n"

	fileState   = "*/run/tracer*\n: the state directory (0700): what each running tracer changed on the node, for **tracer cleanup** after a kill; made at boot by */usr/lib/tmpfiles.d/tracer.conf*.\n\n"
	fileService = "*/usr/lib/systemd/system/tracer.service*\n: runs **tracer cleanup**, then **tracer watch** as a node agent; not enabled on install.\n\n" +
		"*/etc/sysconfig/tracer* (RPM), */etc/default/tracer* (deb)\n: the service's flags: TRACER_BACKEND, TRACER_FORMAT, TRACER_OUTPUT, TRACER_METRICS_ADDR, TRACER_WEB_CONFIG_FILE and TRACER_FLAGS.\n\n" +
		"*/var/log/tracer*\n: the service's event log, *events.jsonl* (0600), rotated by */etc/logrotate.d/tracer* (SIGHUP makes tracer reopen it).\n\n"
	fileDocs = "*/usr/share/doc/tracer*\n: README.md and docs/*.md: *docs/events.md* holds every JSON field.\n\n"
	fileComp = "*/usr/share/bash-completion/completions/tracer*, */usr/share/zsh/vendor-completions/_tracer* (deb) or */usr/share/zsh/site-functions/_tracer* (RPM), */usr/share/fish/vendor_completions.d/tracer.fish*\n: shell completion, of flags and of their values (**tracer completion SHELL** writes it).\n\n"
)

// textColumnHelp says what each column of watch's text output holds.
var textColumnHelp = map[string]string{
	"TIME":    "when the event happened (**--time**: clock, iso, relative, or none, which drops the column)",
	"BACKEND": "audit or ebpf",
	"TYPE":    "exec, fork, signal, exit, or throttle (**--rate-limit**)",
	"PID":     "the process the event is of",
	"COMM":    "its command name (at most 15 bytes, escaped)",
	"UID":     "its real uid",
	"DETAILS": "by type: exec: ppid, ret, the program and its arguments; fork: the syscall and the child's pid; signal: the syscall, the target, the signal, ret and its fate; exit: code=N, or the signal that killed it and who sent it; throttle: what was counted",
}

// manSections are the sections of cmd's page that cobra has no field for.
func manSections(cmd *cobra.Command) []manSection {
	exit := exitOK + exitFail + exitUsage
	var out, env, files string
	switch cmd.CommandPath() {
	case "tracer":
		exit += "**tracer trace** exits with its command's status.\n"
		env = envSudo + envOTLP + envGOMAXPROCS
		files = fileState + fileService + fileDocs + fileComp
	case "tracer watch":
		out = "With **--format text** (the default) a header line, then one line per event, in columns:\n\n"
		for _, col := range strings.Fields(sink.TextHeader) {
			out += "**" + col + "**\n: " + textColumnHelp[col] + "\n\n"
		}
		out += "**--format json** writes one JSON object per line, **ecs** and **ocsf** those schemas' documents: " +
			"*/usr/share/doc/tracer/docs/events.md* gives every field. The banner, notes and the summary of events seen and lost go to stderr (not with **--quiet**).\n"
		exit = "**0**\n: it stopped at Ctrl-C, SIGTERM or the end of **--duration**, with its rules or probes removed.\n\n" + exitFail + exitUsage
		env = envOTLP + envGOMAXPROCS
		files = fileState + fileService
	case "tracer trace":
		out = "CMD's stdin, stdout and stderr pass through. The report goes to stderr (or **--output**): with **--format table** a line per key, " +
			"as bpftrace prints its maps, **@exec_calls[COMM, FILE]: N**, **@fork_calls[COMM]: N** and **@signals[COMM -> PID, SIGNAL]: N**, " +
			"then **total: exec N  fork N  signal N  lost N** and **elapsed  user  sys  cpu** of the tree; **--format json** the same as one object " +
			"(*/usr/share/doc/tracer/docs/trace.md*).\n"
		exit = "CMD's exit status, once CMD ran (**0** when CMD exited 0); before it runs:\n\n" + exitFail + exitUsage
		files = fileState
	case "tracer bench":
		exit = "**0**\n: this tool's own modes worked; a peer mode (auditd, bpftrace) that failed is listed with its cause.\n\n" + exitFail + exitUsage
		env = envSudo
	case "tracer report":
		env = envSudo
	case "tracer cleanup":
		files = fileState
	case "tracer doctor":
		exit = "**0**\n: the report was written, whatever the verdicts.\n\n" + exitFail + exitUsage
	}
	var secs []manSection
	if out != "" {
		secs = append(secs, manSection{"OPTIONS", "# OUTPUT\n" + out})
	}
	secs = append(secs, manSection{"EXAMPLE", "# EXIT STATUS\n" + exit})
	if env != "" {
		secs = append(secs, manSection{"EXAMPLE", "# ENVIRONMENT\n" + env})
	}
	if files != "" {
		secs = append(secs, manSection{"EXAMPLE", "# FILES\n" + files})
	}
	return secs
}
