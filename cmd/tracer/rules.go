// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

type rulesOptions struct {
	arch    string
	events  string
	signals string
	auidSet bool
	machine string
	lean    bool
	key     string
	failed  bool
}

func newRulesCmd() *cobra.Command {
	var o rulesOptions
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "Print the minimal audit rules for the chosen events, in auditctl syntax",
		Long: `Print the audit rules tracer's audit backend would load for the chosen events
and signals, in auditctl syntax, to persist on the node (in
/etc/audit/rules.d/, loaded by augenrules) so that auditd logs the same
events. Rules persisted with their key (--key) are the node's: no tracer
and no tracer cleanup ever removes them. Nothing is loaded: this runs
without root, and off Linux (--machine names the node's architecture).`,
		Example: `  tracer rules
  tracer rules --events signal --signal USR1 --arch both
  tracer rules > /etc/audit/rules.d/tracer.rules
  tracer rules --key node-exec --events exec`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			types, err := vocab.ParseTypes(o.events)
			if err != nil {
				return vocab.Usagef("%v", err)
			}
			sigs, err := vocab.ParseSignals(o.signals)
			if err != nil {
				return vocab.Usagef("%v", err)
			}
			if err := checkSignalsKept(types, sigs, o.signals != ""); err != nil {
				return err
			}
			if err := auditrules.CheckPersistentKey(o.key); err != nil {
				return err
			}
			set, err := auditrules.Build(auditrules.Options{
				Arch: o.arch, Types: types, Signals: sigs, AuidSet: o.auidSet,
				ScopeAUID: vocab.UnsetID, Machine: o.machine, Key: o.key, ExecFailures: o.failed,
				Has32Bit: host.Running32Bit,
			})
			if err != nil {
				return err
			}
			if _, err = fmt.Fprint(cmd.OutOrStdout(), set.Text()); err != nil {
				return err
			}
			lean := auditrules.LeanTypes(types.Has(vocab.TypeSignal), false)
			if !o.lean {
				fmt.Fprintf(os.Stderr, "tracer: note: watch and trace also exclude %s records while no other consumer (auditd) reads them: tracer rules --lean-records prints those rules\n",
					strings.Join(lean, ", "))
				return nil
			}
			fmt.Fprintln(cmd.OutOrStdout(), "# lean records: global exclude rules; auditd's log misses these record types while they are loaded")
			fmt.Fprintln(cmd.OutOrStdout(), "# (beside auditd, with --lean-records, the EOE rule is left out: auditd ends events at their EOE)")
			for _, typ := range lean {
				fmt.Fprintln(cmd.OutOrStdout(), auditrules.ExcludeRule(typ).Text())
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.arch, "arch", "auto", archHelp)
	fl.BoolVar(&o.lean, "lean-records", false, "also print the exclude rules of lean records (record types tracer does not read)")
	fl.StringVar(&o.events, "events", "exec,fork,signal", eventsHelp)
	fl.StringVar(&o.signals, "signal", "", "signals to keep, numbers or names (10, USR1, SIGUSR1); default all")
	fl.BoolVar(&o.auidSet, "auid-set", false, "only processes with a login uid (-F auid!=unset)")
	fl.BoolVar(&o.failed, "exec-failures", false, "also record failed exec attempts (by default the exec rule has -F success=1)")
	fl.StringVar(&o.key, "key", auditrules.Key, "the rules' key (-k): rules persisted with it are the node's, never removed by tracer cleanup or by a tracer")
	fl.StringVar(&o.machine, "machine", "", "rules for another machine (x86_64, aarch64, ppc64le, s390x); default this one")
	registerEventCompletions(cmd)
	_ = cmd.RegisterFlagCompletionFunc("arch", completeOne("auto", "b64", "b32", "both"))
	_ = cmd.RegisterFlagCompletionFunc("machine", completeOne(auditrules.Machines()...))
	return cmd
}
