// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

func TestWatchTargetBadInput(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"watch", "--backend", "ebpf", "--target", "0"}, "--target 0"},
		{[]string{"watch", "--backend", "ebpf", "--target", "a-process-name-too-long"}, "15-byte"},
		{[]string{"watch", "--backend", "ebpf", "--target", "sleep", "--events", "exec"}, "add signal or exit"},
		{[]string{"watch", "--backend", "audit", "--cgroup", "/no-such-cgroup.slice"}, "--cgroup"},
		{[]string{"watch", "--backend", "ebpf", "--ancestry", "17"}, "--ancestry"},
	}
	for _, c := range cases {
		code, stdout, stderr := runTracer(t, nil, c.args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("tracer %v: exit %d, stderr %q (want exit 2 and one line containing %q)", c.args, code, stderr, c.want)
		}
	}
}

// "Who killed it" in one command: watch --target PID prints the signal
// sent to the process and its death, and nothing else, and the text format
// says the cause in words.
func TestWatchTargetWhoKilledIt(t *testing.T) {
	tracertest.NeedRoot(t)
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			victim := exec.Command("sleep", "1000")
			if err := victim.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = victim.Process.Kill(); _ = victim.Wait() })
			pid := strconv.Itoa(victim.Process.Pid)
			outPath := filepath.Join(t.TempDir(), "out")
			out, err := os.Create(outPath)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			w := startWatcher(t, out, "--backend", "ebpf", "--target", pid, "--format", format, "--ancestry", "2")
			killer := exec.Command("sh", "-c", "kill -TERM "+pid)
			if err := killer.Run(); err != nil {
				t.Fatal(err)
			}
			_ = victim.Wait()
			time.Sleep(300 * time.Millisecond)
			w.stop(t)
			data, _ := os.ReadFile(outPath)
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			sh := strconv.Itoa(killer.Process.Pid)
			if format == "text" {
				// The header, the signal, the death.
				if len(lines) != 3 || !strings.Contains(lines[1], "kill -> "+pid+" SIGTERM ret=0 (SI_USER, delivered, to sleep)") ||
					!strings.HasSuffix(lines[2], "killed by SIGTERM from sh (pid "+sh+") via kill") {
					t.Errorf("watch --target %s printed:\n%s", pid, data)
				}
				return
			}
			if len(lines) != 2 {
				t.Fatalf("watch --target %s printed %d events:\n%s", pid, len(lines), data)
			}
			var sig, exit map[string]any
			if json.Unmarshal([]byte(lines[0]), &sig) != nil || json.Unmarshal([]byte(lines[1]), &exit) != nil {
				t.Fatalf("bad JSON:\n%s", data)
			}
			kb, _ := exit["killed_by"].(map[string]any)
			if sig["type"] != "signal" || sig["code"] != "SI_USER" || sig["origin"] != "user" || sig["result"] != "delivered" ||
				sig["target_comm"] != "sleep" || sig["syscall"] != "kill" || exit["type"] != "exit" || exit["signal_name"] != "SIGTERM" ||
				exit["core_dumped"] != false || kb == nil || kb["comm"] != "sh" || kb["origin"] != "user" || kb["code"] != "SI_USER" ||
				kb["exec_id"] != sig["exec_id"] || exit["exec_id"] != sig["target_exec_id"] || exit["exit_code"] != nil {
				t.Errorf("events:\n%s", data)
			}
			// --ancestry 2: the victim's parent is this test, the sender's parent too.
			self := strconv.Itoa(os.Getpid())
			for _, ev := range []map[string]any{sig, exit} {
				anc, _ := ev["ancestors"].([]any)
				if len(anc) != 2 {
					t.Errorf("ancestors of %v: %v", ev["type"], anc)
					continue
				}
				first, _ := anc[0].(map[string]any)
				if first == nil || first["exec_id"] != ev["parent_exec_id"] {
					t.Errorf("ancestors of %v: %v", ev["type"], anc)
				}
				if ev["type"] == "exit" && fmt.Sprint(first["pid"]) != self {
					t.Errorf("the victim's parent is %v, want this test (%s)", first["pid"], self)
				}
			}
		})
	}
}
