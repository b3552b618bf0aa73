// SPDX-License-Identifier: Apache-2.0

// Package host is the one reader of the host: /proc (a process's stat,
// cgroup, comm and executable, the boot id), cgroups (the v2 hierarchy, a
// cgroup's id, what a cgroup path says of its unit and container), the
// mount table and the disks under a path (/sys/block: whole disks, whether
// they spin, whether they are virtual), the lockdown mode and the 32-bit
// processes running. It imports only tracer/vocab (usage errors), so that
// every layer can read the host the same way: the backends on the event
// path (the eBPF backend's lockdown check), the callers of auditrules for
// 32-bit processes, tracer/tracefs for tracefs, tracer/node for the facts
// that doctor prints and bench records.
//
// Readers that take procRoot read the directory procfs is mounted on
// ("/proc" on the running node, a recorded tree in tests) and go through
// github.com/prometheus/procfs where it has the file; the readers of the
// event path read /proc itself with plain syscalls.
package host
