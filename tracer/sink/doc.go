// Package sink holds the output formats and destinations that pipelines
// speak beyond tracer's own text and JSON lines: the schemas (ECS, OCSF),
// registered as --format values with tracer.RegisterFormat, and the
// destinations that take events rather than bytes (a rotated file, the
// journal, syslog, OTLP). Each counts what it could not deliver as loss at
// stage output, like every other sink, and never makes the node wait.
package sink
