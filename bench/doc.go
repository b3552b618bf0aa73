// Package bench measures what watching costs: it runs built-in workloads (or
// any command) untraced and under each way of tracing, interleaving rounds,
// and reports medians, per-round ratios to the untraced run, the tracer's own
// CPU and events expected, seen and lost. Its results are rows of a result
// file (package bench/result); package bench/report renders them.
package bench
