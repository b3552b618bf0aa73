// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"io"
	"os"
	"strings"
	"syscall"

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
	flagsFile  string
}

func (f *followFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.keys, "keys", "", "audit: add no rules; read the records of the node's loaded rules with these keys (KEY,...), e.g. those tracer rules --key KEY printed and the node loads; works beside auditd and with rules locked (-e 2)")
	fl.StringVar(&f.rules, "rules", "own", "audit: own (load tracer's rules, remove them on exit), or existing (add none; read the records of every loaded rule that records the events asked for)")
	fl.BoolVar(&f.fromAuditd, "from-auditd", false, "audit: run as auditd's plugin: read its output (plugins.d, format = string) on stdin instead of the kernel, adding no rules; with --keys, only those rules' records (docs/backends.md)")
	fl.StringVar(&f.flagsFile, "flags-file", "", "read more watch flags from FILE (split at spaces and lines, no quoting, # comments), which root must own and only root may write: auditd passes its plugins at most two arguments (args = watch --flags-file=FILE)")
	_ = cmd.RegisterFlagCompletionFunc("rules", completeOne("own", "existing"))
}

// loadFlagsFile parses --flags-file's flags into cmd's, after those of the
// command line. auditd starts a plugin with at most two arguments, so the
// plugin's watch flags live in a file; tracer runs as root there, so the
// file must be root's and writable by no one else.
func (f *followFlags) loadFlagsFile(cmd *cobra.Command) error {
	if f.flagsFile == "" {
		return nil
	}
	path := f.flagsFile
	fd, err := os.Open(path)
	if err != nil {
		return vocab.Usagef("--flags-file: %v", err)
	}
	defer fd.Close()
	fi, err := fd.Stat()
	if err != nil {
		return vocab.Usagef("--flags-file: %v", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 && (st.Uid != 0 || fi.Mode().Perm()&0o022 != 0) {
		return vocab.Usagef("--flags-file %s must be root's and writable by no other user (chown root %s; chmod go-w %s): its flags choose what tracer does as root", path, path, path)
	}
	data, err := io.ReadAll(io.LimitReader(fd, 64<<10))
	if err != nil {
		return vocab.Usagef("--flags-file: %v", err)
	}
	var args []string
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		args = append(args, strings.Fields(line)...)
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--flags-file") {
			return vocab.Usagef("--flags-file %s names --flags-file: one file only", path)
		}
	}
	if err := cmd.Flags().Parse(args); err != nil {
		return vocab.Usagef("--flags-file %s: %v", path, err)
	}
	if rest := cmd.Flags().Args(); len(rest) > 0 {
		return vocab.Usagef("--flags-file %s: %q is not a flag", path, rest[0])
	}
	return nil
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
