// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An unknown shell is bad input: exit 2 and one line naming the shells.
func TestCompletionUnknownShell(t *testing.T) {
	code, stdout, stderr := runTracer(t, nil, "completion", "tcsh")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code != 2 || len(lines) != 1 || !strings.Contains(stderr, "bash, zsh, fish") || stdout != "" {
		t.Errorf("tracer completion tcsh: exit %d, stdout %q, stderr %q (want exit 2 and one line naming bash, zsh, fish)", code, stdout, stderr)
	}
	if code, stdout, _ := runTracer(t, nil, "completion", "bash"); code != 0 || !strings.Contains(stdout, "__start_tracer") {
		t.Errorf("tracer completion bash: exit %d, %.200q", code, stdout)
	}
}

// A flag refused leaves no output file behind: every flag is checked
// before -o FILE is created.
func TestRefusedFlagsLeaveNoOutputFile(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"watch", "--backend", "ebpf", "--format", "yaml"}, "unknown format \"yaml\""},
		{[]string{"watch", "--backend", "ebpf", "--time", "iso", "--format", "json"}, "--time is for text output"},
	} {
		out := filepath.Join(t.TempDir(), "events")
		args := append(c.args, "--duration", "1s", "-o", out)
		code, stdout, stderr := runTracerWithin(t, 10*time.Second, args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("tracer %v: exit %d, stderr %q (want exit 2 and one line containing %q)", args, code, stderr, c.want)
		}
		if _, err := os.Lstat(out); err == nil {
			t.Errorf("tracer %v left %s behind", args, out)
		}
	}
}

// A user who is not root and gives a bad flag value hears of the value,
// not of root: the flags are checked first.
func TestFlagsCheckedBeforeRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("runs the binary as nobody: needs root to drop to it")
	}
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	// Readable by nobody; rootOnly is not, as a key often is not.
	dir, err := os.MkdirTemp("", "tracer-preflight")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	web, rootOnly := filepath.Join(dir, "web.yml"), filepath.Join(dir, "root-web.yml")
	if err := os.WriteFile(web, []byte("tls_server_config: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rootOnly, []byte("basic_auth_users: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"watch", "--backend", "ebpf", "--ring-size", "1000"}, "--ring-size 1000 is not a power of two"},
		{[]string{"trace", "--backend", "ebpf", "--ring-size", "1000", "--", "true"}, "--ring-size 1000 is not a power of two"},
		{[]string{"bench", "--ring-size", "1000"}, "--ring-size 1000 is not a power of two"},
		{[]string{"watch", "--backend", "ebpf", "--metrics-addr", "nonsense"}, "--metrics-addr nonsense"},
		{[]string{"watch", "--backend", "audit", "--metrics-addr", "127.0.0.1:99999"}, "--metrics-addr 127.0.0.1:99999"},
		{[]string{"trace", "--backend", "ebpf", "--metrics-addr", "unix:", "--", "true"}, "--metrics-addr unix:"},
		{[]string{"watch", "--backend", "ebpf", "--web.config.file", web}, "--web.config.file needs --metrics-addr"},
		{[]string{"watch", "--backend", "ebpf", "--metrics-comm"}, "--metrics-comm needs --metrics-addr"},
		{[]string{"watch", "--backend", "ebpf", "--metrics-addr", "127.0.0.1:0", "--web.config.file", web}, "bad --web.config.file"},
		{[]string{"watch", "--backend", "ebpf", "--metrics-addr", "127.0.0.1:0", "--web.config.file", "/no/such/web.yml"}, "bad --web.config.file"},
		{[]string{"watch", "--backend", "ebpf", "--format", "yaml"}, "unknown format \"yaml\""},
		// What only root may read is checked once root.
		{[]string{"watch", "--backend", "ebpf", "--metrics-addr", "127.0.0.1:0", "--web.config.file", rootOnly}, "needs root"},
	} {
		code, stdout, stderr := runTracer(t, nobody, c.args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("tracer %v as nobody: exit %d, stderr %q (want exit 2 and one line containing %q)", c.args, code, stderr, c.want)
		}
	}
}

// tracer never takes the audit PID (it reads the multicast group): the
// help of --allow-panic-failure-mode says what the flag allows.
func TestPanicFailureModeHelp(t *testing.T) {
	for _, cmd := range []string{"watch", "trace"} {
		code, stdout, _ := runTracer(t, nil, cmd, "--help")
		i := strings.Index(stdout, "--allow-panic-failure-mode")
		if code != 0 || i < 0 {
			t.Fatalf("tracer %s --help: exit %d, no --allow-panic-failure-mode", cmd, code)
		}
		help, _, _ := strings.Cut(stdout[i:], "\n      --")
		help = strings.Join(strings.Fields(help), " ")
		if strings.Contains(help, "become the audit daemon") || !strings.Contains(help, "no audit daemon holds the audit PID") {
			t.Errorf("tracer %s --help: --allow-panic-failure-mode says %q", cmd, help)
		}
	}
}

// README's requirement is the code's: uid 0, which the capabilities alone
// do not replace.
func TestRootRequirementDocumented(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("runs the binary as nobody with capabilities: needs root")
	}
	const (
		capAuditControl = 30
		capAuditRead    = 37
		capPerfmon      = 38
		capBPF          = 39
	)
	cmd := exec.Command(tracerBin, "watch", "--backend", "ebpf", "--duration", "1s")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential:  &syscall.Credential{Uid: 65534, Gid: 65534},
		AmbientCaps: []uintptr{capAuditControl, capAuditRead, capPerfmon, capBPF},
	}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "needs root") {
		t.Fatalf("watch as nobody with the capabilities: %v %q (want exit 2, needs root)", err, out)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, req, _ := strings.Cut(string(readme), "\n## Requirements\n")
	para, _, _ := strings.Cut(strings.TrimSpace(req), "\n\n")
	para = strings.Join(strings.Fields(para), " ")
	if !strings.Contains(para, "uid 0") || strings.Contains(para, "Root (or CAP_") {
		t.Errorf("README's Requirements do not say that tracer needs uid 0, whatever the capabilities:\n%s", para)
	}
}
