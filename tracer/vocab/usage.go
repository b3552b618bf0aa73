// SPDX-License-Identifier: Apache-2.0

package vocab

import (
	"errors"
	"fmt"
)

// ErrUsage marks errors caused by the user's input or the node's setup that
// the user can fix (not root, audit locked, unknown signal). cmd/ maps it to
// exit status 2.
var ErrUsage = errors.New("usage")

// UsageError is an error the user can fix: errors.Is(err, ErrUsage) holds,
// and its cause, when it has one, stays reachable (errors.Is(err,
// syscall.EPERM) works through it).
type UsageError struct {
	Msg string
	Err error // the cause, or nil
}

func (e *UsageError) Error() string { return e.Msg }

// Is makes errors.Is(err, ErrUsage) true.
func (e *UsageError) Is(target error) bool { return target == ErrUsage }

// Unwrap returns the cause.
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef builds a UsageError; as with fmt.Errorf, a %w verb names the cause.
func Usagef(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &UsageError{Msg: err.Error(), Err: errors.Unwrap(err)}
}
