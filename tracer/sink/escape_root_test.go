// SPDX-License-Identifier: Apache-2.0

//go:build linux

package sink_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/audit"
	"github.com/tracer-dev/tracer/tracer/bpfbackend"
	"github.com/tracer-dev/tracer/tracer/sink"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// hostileC renames itself to argv[1] with prctl, signals itself, then forks
// a child that execs argv[2] with argv[3:] as its argv: every string a
// backend reports comes from the command line.
const hostileC = `
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_usr1(int sig) { (void)sig; }

int main(int argc, char **argv) {
	if (argc < 4) return 2;
	if (prctl(PR_SET_NAME, argv[1], 0, 0, 0) != 0) return 3;
	signal(SIGUSR1, on_usr1);
	if (kill(getpid(), SIGUSR1) != 0) return 4;
	pid_t pid = fork();
	if (pid < 0) return 5;
	if (pid == 0) {
		execv(argv[2], &argv[3]);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 6;
	return 0;
}
`

// Strings any unprivileged user controls: a comm (15 bytes at most) and a
// file name with a newline, ESC sequences, DEL, C1 controls (U+0085,
// U+009B) and bytes that are not UTF-8.
const (
	hostileComm = "x\nF\x1b[31m\xff\x7f\xc2\x85"
	hostileBase = "t\n\x1b[2Jfake\xfe\x7f\xc2\x9bz"
)

var hostileArgs = []string{"a\nFAKE\x1b]0;title\x07", "\xff\xfe\r\t", "\xc2\x85\xe2\x80\xa8ok"}

// The text output of real events whose comm, file name and argv hold
// control bytes and invalid UTF-8 must stay one line per event, with no raw
// control byte and nothing that is not UTF-8; the JSON output must stay
// valid JSON, one object per line.
func TestHostileStringsOutput(t *testing.T) {
	tracertest.LockAudit(t)
	dir := t.TempDir()
	bin := tracertest.CompileC(t, dir, "hostile", []byte(hostileC))
	trueBin, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, hostileBase)
	if err := os.WriteFile(target, trueBin, 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{hostileComm, target}, hostileArgs...)

	cfg := tracer.DefaultConfig()
	cfg.Types, _ = vocab.ParseTypes("all")
	cfg.Signals, _ = vocab.ParseSignals("USR1")
	cfg.ExecFailures = true // the workload's execfail is counted
	runs := []struct {
		name   string
		b      tracer.Backend
		probes string
	}{{"audit", audit.New(), ""}, {"ebpf", bpfbackend.New(), ""}, {"ebpf-syscalls", bpfbackend.New(), "syscalls"}}
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			cfg.Probes = r.probes
			events, _ := tracertest.RunWorkload(t, r.b, cfg, bin, args...)
			if err := r.b.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			f := tracer.NewFilter(cfg)
			var kept []*tracer.Event
			sawExec, sawSignal := false, false
			for i := range events {
				e := &events[i]
				if !f.Match(e) {
					continue
				}
				kept = append(kept, e)
				sawExec = sawExec || e.Type == vocab.TypeExec && e.Filename == target
				sawSignal = sawSignal || e.Type == vocab.TypeSignal && e.Comm == hostileComm
			}
			// Without the hostile strings in the events the output checks prove nothing.
			if !sawExec || !sawSignal {
				var seen []string
				for _, e := range kept {
					seen = append(seen, strconv.Quote(tracertest.Key(*e)))
				}
				t.Fatalf("exec of the hostile file seen: %v, signal by the hostile comm seen: %v; events:\n%s",
					sawExec, sawSignal, strings.Join(seen, "\n"))
			}

			var text bytes.Buffer
			s := sink.NewTextSink(&text)
			for _, e := range kept {
				if err := s.Write(e); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			checkOneLineEach(t, "text", text.Bytes(), len(kept)+1) // +1: the header

			var js bytes.Buffer
			s2 := sink.NewJSONSink(&js)
			for _, e := range kept {
				if err := s2.Write(e); err != nil {
					t.Fatal(err)
				}
			}
			if err := s2.Flush(); err != nil {
				t.Fatal(err)
			}
			checkOneLineEach(t, "json", js.Bytes(), len(kept))
			for _, line := range bytes.Split(bytes.TrimSuffix(js.Bytes(), []byte("\n")), []byte("\n")) {
				if !json.Valid(line) {
					t.Errorf("invalid JSON line %q", line)
				}
			}
		})
	}
}

// checkOneLineEach fails t unless out is exactly lines newline-terminated
// lines of valid UTF-8 without control characters.
func checkOneLineEach(t *testing.T, format string, out []byte, lines int) {
	t.Helper()
	if n := bytes.Count(out, []byte("\n")); n != lines || !bytes.HasSuffix(out, []byte("\n")) {
		t.Errorf("%s: %d lines for %d expected:\n%q", format, n, lines, out)
	}
	if bad := controlOrInvalid(bytes.ReplaceAll(out, []byte("\n"), nil)); bad != "" {
		t.Errorf("%s output holds %s:\n%q", format, bad, out)
	}
}

// controlOrInvalid names the first raw control character (C0, DEL, C1) or
// invalid UTF-8 byte in b, or returns "".
func controlOrInvalid(b []byte) string {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return "invalid UTF-8 at byte " + strconv.Itoa(i)
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
			return "control character " + strconv.Itoa(int(r)) + " at byte " + strconv.Itoa(i)
		}
		i += size
	}
	return ""
}
