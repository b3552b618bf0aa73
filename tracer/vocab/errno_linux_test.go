// SPDX-License-Identifier: Apache-2.0

package vocab

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The table names what the kernel's headers name (x/sys/unix prefers
// another name for two numbers that have two).
func TestErrnoNamesAgreeWithLinux(t *testing.T) {
	alias := map[string]string{"ENOTSUP": "EOPNOTSUPP", "EFSCORRUPTED": "EUCLEAN"}
	for i := int64(1); i < int64(len(errnoNames)); i++ {
		want := unix.ErrnoName(syscall.Errno(i))
		if a, ok := alias[want]; ok {
			want = a
		}
		if got := ErrnoName(i); got != want {
			t.Errorf("ErrnoName(%d) = %q, want %q", i, got, want)
		}
	}
}
