package auditrules

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tracer-dev/tracer/tracer/node/host"
)

// Detect32Bit looks for a running 32-bit process under procRoot: an
// executable whose ELF class says ELFCLASS32. It returns the first one
// found. Kernel threads and processes that vanish while being read are
// skipped.
func Detect32Bit(procRoot string) (pid int, comm string, found bool) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return 0, "", false
	}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if class, err := host.ExeClass(procRoot, n); err != nil || class != 32 {
			continue
		}
		c, _ := os.ReadFile(filepath.Join(procRoot, e.Name(), "comm"))
		return n, strings.TrimSpace(string(c)), true
	}
	return 0, "", false
}
