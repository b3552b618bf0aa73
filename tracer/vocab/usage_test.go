// SPDX-License-Identifier: Apache-2.0

package vocab

import (
	"errors"
	"syscall"
	"testing"
)

func TestUsageErrorKeepsItsCause(t *testing.T) {
	err := Usagef("reading audit status was refused (%w): run as root", syscall.EPERM)
	if !errors.Is(err, ErrUsage) || !errors.Is(err, syscall.EPERM) {
		t.Fatalf("errors.Is through UsageError: usage %v, EPERM %v", errors.Is(err, ErrUsage), errors.Is(err, syscall.EPERM))
	}
	if err.Error() != "reading audit status was refused (operation not permitted): run as root" {
		t.Fatalf("message %q", err.Error())
	}
}
