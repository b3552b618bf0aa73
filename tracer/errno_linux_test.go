package tracer

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
	if got := string(appendRet(nil, -2)); got != "ENOENT" {
		t.Errorf("appendRet(-2) = %q, want ENOENT", got)
	}
	for ret, want := range map[int64]string{0: "0", 3: "3", -4095: "-4095"} {
		if got := string(appendRet(nil, ret)); got != want {
			t.Errorf("appendRet(%d) = %q, want %q", ret, got, want)
		}
	}
}
