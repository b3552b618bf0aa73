// SPDX-License-Identifier: Apache-2.0

// Package sink holds everything that turns events into output: the
// encoders (tracer's text and JSON lines, and the schemas ECS and OCSF,
// each a --format value in one registry: RegisterFormat, NewSink), the
// output queue between the goroutine that encodes and the one that writes,
// and the destinations (stdout or a file, a rotated file, the journal,
// syslog, OTLP). It implements tracer.Sink and imports the contract, never
// the reverse. Each sink counts what it could not deliver as loss at stage
// output and never makes the node wait.
package sink
