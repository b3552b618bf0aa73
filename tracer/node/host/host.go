// Package host reads the host facts that packages below tracer/node need
// too: the mount table (tracer/tracefs looks for tracefs in it, package
// tracer for the cgroup v2 hierarchy) and the ELF class of a process's
// executable (auditrules adds b32 rules when a 32-bit process runs).
// Package node imports those packages, so they cannot import node; this
// package imports nothing of the project, and node builds its facts on
// it. Everything else asks package node.
//
// Readers take the directory procfs is mounted on ("/proc" on the running
// node, a recorded tree in tests) and read through
// github.com/prometheus/procfs where it has the file.
package host
