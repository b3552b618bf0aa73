// Package workload forwards to tracertest.BuildWorkload (kept while tests move over).
package workload

import (
	"testing"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// Build compiles the test workload; see tracertest.BuildWorkload.
func Build(t testing.TB) string { return tracertest.BuildWorkload(t) }
