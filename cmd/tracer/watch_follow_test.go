// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Bad --keys, --rules and --flags-file end in one line and exit status 2,
// before the root check (run as nobody) and before anything is installed.
func TestWatchFollowUsage(t *testing.T) {
	dir := t.TempDir()
	nested := filepath.Join(dir, "nested.flags")
	if err := os.WriteFile(nested, []byte("--backend audit\n--flags-file=/etc/passwd\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(dir, "stray.flags")
	if err := os.WriteFile(stray, []byte("--backend audit --keys a b # b is no flag\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	for _, c := range []struct {
		args []string
		want string
		root bool // a file only root reads
	}{
		{[]string{"--backend", "audit", "--keys", "a b"}, `--keys: key "a b" holds a space, quote or comma`, false},
		{[]string{"--backend", "audit", "--keys", `a"b`}, "holds a space, quote or comma", false},
		{[]string{"--backend", "audit", "--keys", "a,,b"}, "--keys has an empty key", false},
		{[]string{"--backend", "audit", "--keys", strings.Repeat("k", 256)}, "the kernel keeps at most 255", false},
		{[]string{"--backend", "ebpf", "--keys", "tracer"}, "use them with --backend audit", false},
		{[]string{"--backend", "ebpf", "--from-auditd"}, "use them with --backend audit", false},
		{[]string{"--backend", "audit", "--rules", "mine"}, `--rules "mine": use own`, false},
		{[]string{"--backend", "audit", "--rules", "existing", "--keys", "tracer"}, "leave out --keys, or --rules", false},
		{[]string{"--flags-file", nested}, "names --flags-file: one file only", true},
		{[]string{"--flags-file", stray}, `"b" is not a flag`, true},
		{[]string{"--flags-file", filepath.Join(dir, "none")}, "--flags-file: open", true},
	} {
		cred := nobody
		if c.root {
			if os.Geteuid() != 0 {
				continue
			}
			cred = nil
		}
		code, _, stderr := runTracer(t, cred, append([]string{"watch"}, c.args...)...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(lines[0], c.want) {
			t.Errorf("watch %q: exit %d, stderr %q; want one line with %q and exit 2", c.args, code, stderr, c.want)
		}
	}
}

// A --flags-file another user may write is refused when root reads it:
// its flags choose what tracer does as root.
func TestWatchFlagsFileOwnerUsage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("checks what root reads")
	}
	f := filepath.Join(t.TempDir(), "plugin.flags")
	if err := os.WriteFile(f, []byte("--backend audit --from-auditd\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f, 0o666); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runTracer(t, nil, "watch", "--flags-file", f)
	if code != 2 || !strings.Contains(stderr, "must be root's and writable by no other user") {
		t.Errorf("a world-writable --flags-file: exit %d, %q", code, stderr)
	}
}
