// SPDX-License-Identifier: Apache-2.0

package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Lockdown returns the kernel lockdown mode in force under root ("/" on
// the running node, a recorded tree in tests): "none", "integrity" or
// "confidentiality". The error wraps fs.ErrNotExist when the kernel has no
// lockdown LSM or securityfs is not mounted. Both the eBPF backend (whose
// programs lockdown refuses) and doctor read it here.
func Lockdown(root string) (string, error) {
	if root == "" {
		root = "/"
	}
	b, err := os.ReadFile(filepath.Join(root, "/sys/kernel/security/lockdown"))
	if err != nil {
		return "", fmt.Errorf("reading the lockdown mode: %w", err)
	}
	return ParseLockdown(string(b)), nil
}

// ParseLockdown returns the active mode of /sys/kernel/security/lockdown
// ("none [integrity] confidentiality" -> "integrity").
func ParseLockdown(s string) string {
	i := strings.IndexByte(s, '[')
	j := strings.IndexByte(s, ']')
	if i < 0 || j < i {
		return strings.TrimSpace(s)
	}
	return s[i+1 : j]
}
