// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Help texts the commands share.
const (
	eventsHelp = "event classes, comma-separated: exec, fork, signal, exit (or all)"
	archHelp   = "rule arches: b64, b32, both, or auto (b64, and b32 too when a 32-bit process runs now)"
)

// checkSignalsKept refuses --signal when --events keeps no signal events:
// it would filter nothing.
func checkSignalsKept(types vocab.TypeSet, sigs vocab.SignalSet, given bool) error {
	if given && !sigs.All() && !types.Has(vocab.TypeSignal) {
		return vocab.Usagef("--signal filters signal events, which --events %s leaves out: add signal to --events", types)
	}
	return nil
}

// completeList completes a comma list flag from choices: what is typed
// before the last comma stays, the last item is completed.
func completeList(choices ...string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		done, _ := splitLast(toComplete)
		var out []string
		for _, c := range choices {
			if !strings.Contains(","+done, ","+c+",") && (done == "" || c != "all") {
				out = append(out, done+c)
			}
		}
		return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	}
}

// splitLast splits "exec,fo" into "exec," and "fo".
func splitLast(s string) (done, last string) {
	i := strings.LastIndexByte(s, ',') + 1
	return s[:i], s[i:]
}

// completeOne completes a flag that takes one of choices.
func completeOne(choices ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(choices, cobra.ShellCompDirectiveNoFileComp)
}

// signalChoices are the names --signal completes: USR1, TERM...
func signalChoices() []string {
	var out []string
	for n := 1; n <= 31; n++ {
		out = append(out, strings.TrimPrefix(vocab.SignalName(n), "SIG"))
	}
	return out
}

// eventChoices are the names --events completes.
func eventChoices() []string {
	out := []string{"all"}
	for _, t := range vocab.AllTypes {
		out = append(out, t.String())
	}
	return out
}

// registerEventCompletions completes --events and --signal of cmd.
func registerEventCompletions(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("events", completeList(eventChoices()...))
	_ = cmd.RegisterFlagCompletionFunc("signal", completeList(signalChoices()...))
}

// needCommand refuses a trace without the command it is to run.
func needCommand(_ *cobra.Command, args []string) error {
	if len(args) == 0 {
		return vocab.Usagef("trace needs a command to run: tracer trace --backend ebpf -- CMD [ARGS...]")
	}
	return nil
}
