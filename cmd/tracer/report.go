// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"os"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/bench/report"
	"github.com/tracer-dev/tracer/bench/result"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

type reportOptions struct {
	format string
	output string
	mode   string
}

func newReportCmd() *cobra.Command {
	var o reportOptions
	cmd := &cobra.Command{
		Use:   "report [--format md|html] [-o FILE] RESULT.json...",
		Short: "Render bench result files: per node, and a fleet view for many",
		Long: "report turns result files of tracer bench (one per node) into a Markdown or a\n" +
			"self-contained HTML report: facts, verdicts, the bench table, a bar chart of the\n" +
			"ratios, SSD against HDD, and a recommendation per node; with several files also\n" +
			"the fleet: nodes by OS release and kernel, the spread of overhead, the nodes that\n" +
			"cannot run eBPF.",
		Example: `  tracer report result.json
  tracer report --format html -o fleet.html results/*.json`,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(&o, args)
		},
	}
	cmd.Flags().StringVar(&o.format, "format", "md", "output format: md or html")
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "write the report to FILE instead of stdout (mode 0600; under sudo, owned by the user who ran sudo)")
	cmd.Flags().StringVar(&o.mode, "mode", "", "the file mode of -o FILE, octal (e.g. 0644 to share it)")
	_ = cmd.RegisterFlagCompletionFunc("format", completeOne("md", "html"))
	return cmd
}

func runReport(o *reportOptions, args []string) error {
	if o.format != "md" && o.format != "html" {
		return vocab.Usagef("unknown --format %q: use md or html", o.format)
	}
	if len(args) == 0 {
		return vocab.Usagef("no result file given: tracer report RESULT.json... (files written by tracer bench --out)")
	}
	mode, err := parseMode(o.mode)
	if err != nil {
		return err
	}
	if mode != 0 && o.output == "" {
		return vocab.Usagef("--mode sets the mode of -o FILE: give -o FILE too")
	}
	files := make([]*result.File, 0, len(args))
	for _, path := range args {
		f, err := readResult(path)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	r, err := report.New(args, files)
	if err != nil {
		return err
	}
	// Render fully before opening the output, so a failure leaves no half file.
	var buf bytes.Buffer
	if err := report.Write(&buf, r, o.format); err != nil {
		return err
	}
	out, err := openOutput(o.output)
	if err != nil {
		return err
	}
	if _, err := out.Write(buf.Bytes()); err != nil {
		return err
	}
	if out != os.Stdout {
		if err := handOver(out, mode); err != nil {
			_ = out.Close()
			return err
		}
		return out.Close()
	}
	return nil
}
