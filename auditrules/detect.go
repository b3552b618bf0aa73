package auditrules

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Detect32Bit looks for a running 32-bit process under procRoot: an
// executable whose ELF class byte says ELFCLASS32. It returns the first one
// found. Kernel threads and processes that vanish while being read are
// skipped.
func Detect32Bit(procRoot string) (pid int, comm string, found bool) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return 0, "", false
	}
	hdr := make([]byte, 5)
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := os.Open(filepath.Join(procRoot, e.Name(), "exe"))
		if err != nil {
			continue
		}
		_, err = io.ReadFull(f, hdr)
		f.Close()
		if err != nil || !IsELF32(hdr) {
			continue
		}
		c, _ := os.ReadFile(filepath.Join(procRoot, e.Name(), "comm"))
		return n, strings.TrimSpace(string(c)), true
	}
	return 0, "", false
}

// IsELF32 reports whether an ELF header's first bytes say 32-bit class.
func IsELF32(hdr []byte) bool {
	return len(hdr) >= 5 && string(hdr[:4]) == "\x7fELF" && hdr[4] == 1
}
