// Package testutil forwards to tracertest (kept while tests move over).
package testutil

import (
	"testing"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// NeedRoot: see tracertest.NeedRoot.
func NeedRoot(t testing.TB) { t.Helper(); tracertest.NeedRoot(t) }

// LockAudit: see tracertest.LockAudit.
func LockAudit(t testing.TB) { t.Helper(); tracertest.LockAudit(t) }
