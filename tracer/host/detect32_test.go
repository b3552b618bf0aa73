// SPDX-License-Identifier: Apache-2.0

package host

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDetect32Bit(t *testing.T) {
	proc := t.TempDir()
	file := func(p, content string) {
		t.Helper()
		full := filepath.Join(proc, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file("1/comm", "systemd\n")
	file("1/exe", "\x7fELF\x02\x01\x01\x00")
	file("2/comm", "kthreadd\n") // a kernel thread: no exe
	file("self/comm", "tracer\n")
	if _, _, found := Detect32Bit(proc); found {
		t.Error("a 32-bit process found where none runs")
	}
	file("4411/comm", "legacy-agent\n")
	file("4411/exe", "\x7fELF\x01\x01\x01\x00")
	if pid, comm, found := Detect32Bit(proc); !found || pid != 4411 || comm != "legacy-agent" {
		t.Errorf("Detect32Bit = %d, %q, %v; want 4411, legacy-agent", pid, comm, found)
	}
}
