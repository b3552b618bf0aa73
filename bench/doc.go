// SPDX-License-Identifier: Apache-2.0

// Package bench measures what watching costs: it runs built-in workloads (or
// any command) untraced and under each way of tracing, interleaving rounds,
// and reports medians, per-round ratios to the untraced run, the tracer's own
// CPU and events expected, seen and lost. Its results are rows of a result
// file (package bench/result); package bench/report renders them.
//
// Its files are named by what they hold:
//
//   - mode.go: the Mode interface and the registry of modes; mode_*.go and
//     floor_*.go: one way of watching each (a floor: the kernel's own cost
//     of what a mode asks for), registered from its own file (registerMode)
//   - workload*.go: the workloads, their sizing and running
//   - watcher_*.go: the watchers' processes, their logs and their CPU
//   - count*.go: reading what a watcher wrote and counting the workload's events
//   - run_*.go: preparing a bench, running its rounds and the sweep, the storages
//   - result_*.go: samples summed up as rows of the result file
//   - metric.go: a workload's own figure (--metric)
//   - state_linux.go: the kernel's audit settings, the node's auditd and what
//     bench changed on the node, for cleanup
package bench
