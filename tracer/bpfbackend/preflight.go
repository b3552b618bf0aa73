// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bpfbackend

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Capabilities (linux/capability.h).
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

// haveCaps reports whether the process may load and attach tracing
// programs: CAP_BPF with CAP_PERFMON, or CAP_SYS_ADMIN.
func haveCaps() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return os.Geteuid() == 0
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	return has(capSysAdmin) || (has(capBPF) && has(capPerfmon))
}

// lockdownMode returns the kernel lockdown mode in force ("none",
// "integrity", "confidentiality"), or "" when the kernel has no lockdown
// (host.Lockdown, which doctor reads too).
func lockdownMode() string {
	mode, _ := host.Lockdown("/")
	return mode
}

// preflight fails with a usage error when the node cannot run the backend
// whatever it probes (probeKernel comes next).
func preflight() error {
	if !haveCaps() {
		return vocab.Usagef("the ebpf backend needs root (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN): run it with sudo")
	}
	if lockdownMode() == "confidentiality" {
		return vocab.Usagef("kernel lockdown=confidentiality forbids the kernel reads BPF tracing needs: boot with lockdown=integrity or none, or use --backend audit")
	}
	return nil
}

// errNoTracefs marks the usage error of a node where tracefs cannot be mounted.
var errNoTracefs = errors.New("tracefs unavailable")

type noTracefsError struct{ vocab.UsageError }

func (e *noTracefsError) Is(target error) bool {
	return target == vocab.ErrUsage || target == errNoTracefs
}
