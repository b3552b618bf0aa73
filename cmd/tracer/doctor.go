// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"os"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/bench/report"
	"github.com/tracer-dev/tracer/bench/result"
	"github.com/tracer-dev/tracer/tracer/node"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

type doctorOptions struct {
	format string
	bench  []string
}

func newDoctorCmd() *cobra.Command {
	var o doctorOptions
	cmd := &cobra.Command{
		Use:   "doctor [--format text|json] [--bench RESULT.json]",
		Short: "What this node supports, a verdict per backend, and what its audit rules cost",
		Long: "doctor reads the running node (OS, kernel, audit state and rules, eBPF features,\n" +
			"32-bit processes, the disk under the audit log) and judges each backend: works,\n" +
			"works with limits, or cannot, and why. It examines the loaded audit rules for cost.\n" +
			"It changes nothing on the node. Without root some facts stay unknown; it says which.",
		Example: `  sudo tracer doctor
  sudo tracer doctor --format json > node.json
  sudo tracer doctor --bench result.json   # adds the measured per-syscall tax of the rules`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(&o)
		},
	}
	cmd.Flags().StringVar(&o.format, "format", "text", "output format: text or json")
	cmd.Flags().StringSliceVar(&o.bench, "bench", nil, "a bench result file: state the measured syscall tax next to the rule findings")
	_ = cmd.RegisterFlagCompletionFunc("format", completeOne("text", "json"))
	return cmd
}

func runDoctor(o *doctorOptions) error {
	if o.format != "text" && o.format != "json" {
		return vocab.Usagef("unknown --format %q: use text or json", o.format)
	}
	if err := needLinux("doctor"); err != nil {
		return err
	}
	var tax []node.MeasuredTax
	for _, path := range o.bench {
		f, err := readResult(path)
		if err != nil {
			return err
		}
		tax = append(tax, report.SyscallTax(path, f)...)
	}
	facts, err := node.Collect()
	if err != nil {
		return err
	}
	r := node.NewReport(facts)
	r.Tax = tax
	if o.format == "json" {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return r.WriteText(os.Stdout)
}

// readResult reads a bench result file; a missing or malformed file is the
// user's to fix (exit status 2).
func readResult(path string) (*result.File, error) {
	f, err := result.Read(path)
	if err != nil {
		return nil, vocab.Usagef("%v (give a file written by tracer bench -o)", err)
	}
	return f, nil
}
