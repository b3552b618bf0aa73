// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"strings"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Sink writes events somewhere. Write is called from one goroutine; Flush and
// Close may be called from another.
type Sink interface {
	Write(e *Event) error
	Flush() error
	Close() error
}

// OutputLoss is what a sink with an output queue lost: events dropped
// because the queue was full, and events its writer could not write.
type OutputLoss struct{ Queue, Output uint64 }

// LossReporter is a sink that counts its own loss (the queued sinks).
type LossReporter interface {
	Loss() OutputLoss
}

// RotationReporter is a sink (or the file it writes) that rotates its
// output file and counts the rotations that failed.
type RotationReporter interface {
	RotationsFailed() uint64
}

// Kicker is a sink that can pass buffered events on without waiting.
type Kicker interface {
	Kick()
}

// Backpressure says what an output does when its reader falls behind.
type Backpressure uint8

const (
	// BackpressureDrop drops events when the output queue is full and
	// the output has stalled, and counts them (stage queue). While the
	// writer makes progress (a slow disk, a storm) the reader waits for
	// room, and the kernel's buffer (the audit backlog, the eBPF ring)
	// holds what comes meanwhile, or drops and counts it when full: the
	// processes the kernel watches never wait.
	BackpressureDrop Backpressure = iota
	// BackpressureBlock waits for the output: nothing is dropped here, and
	// a stalled reader stalls the backend (and, on audit, the node).
	BackpressureBlock
)

// ParseBackpressure reads a --backpressure value.
func ParseBackpressure(s string) (Backpressure, error) {
	switch strings.ToLower(s) {
	case "", "drop":
		return BackpressureDrop, nil
	case "block":
		return BackpressureBlock, nil
	}
	return 0, vocab.Usagef("unknown --backpressure %q: use drop or block", s)
}

func (b Backpressure) String() string {
	if b == BackpressureBlock {
		return "block"
	}
	return "drop"
}
