// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tracer-dev/tracer/auditrules"
	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/audit"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// followFlags are watch's flags for following the node's audit rules
// instead of loading tracer's own (docs/backends.md, "Following the
// node's rules").
type followFlags struct {
	keys       string
	rules      string
	fromAuditd bool
}

func (f *followFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.keys, "keys", "", "audit: add no rules; read the records of the node's loaded rules with these keys (KEY,...), e.g. those `tracer rules --key KEY` printed and the node loads; works beside auditd and with rules locked (-e 2)")
	fl.StringVar(&f.rules, "rules", "own", "audit: own (load tracer's rules, remove them on exit), or existing (add none; read the records of every loaded rule that records the events asked for)")
	fl.BoolVar(&f.fromAuditd, "from-auditd", false, "audit: run as auditd's plugin: read its output (plugins.d, format = string) on stdin instead of the kernel, adding no rules; with --keys, only those rules' records (docs/backends.md)")
	_ = cmd.RegisterFlagCompletionFunc("rules", completeOne("own", "existing"))
}

// keyList checks --keys: every key as a usage error, before any root check.
func (f *followFlags) keyList() ([]string, error) {
	if f.keys == "" {
		return nil, nil
	}
	var keys []string
	for _, k := range strings.Split(f.keys, ",") {
		if err := auditrules.CheckFollowKey(k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// apply checks the flags and sets the backend up to follow; it reports
// whether the backend reads auditd's output (no kernel access, no root).
func (f *followFlags) apply(backend string, b tracer.Backend) (plugin bool, err error) {
	keys, err := f.keyList()
	if err != nil {
		return false, err
	}
	existing := false
	switch f.rules {
	case "own":
	case "existing":
		existing = true
	default:
		return false, vocab.Usagef("--rules %q: use own (tracer's rules) or existing (the node's)", f.rules)
	}
	asked := len(keys) > 0 || existing || f.fromAuditd
	if !asked {
		return false, nil
	}
	ab, ok := b.(*audit.Backend)
	if !ok || backend != "audit" {
		return false, vocab.Usagef("--keys, --rules existing and --from-auditd follow the node's audit rules: use them with --backend audit")
	}
	if existing && len(keys) > 0 {
		return false, vocab.Usagef("--rules existing follows every loaded rule: leave out --keys, or --rules")
	}
	ab.Follow(keys, existing)
	if f.fromAuditd {
		ab.FromAuditd(os.Stdin)
	}
	return f.fromAuditd, nil
}
