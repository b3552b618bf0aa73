// SPDX-License-Identifier: Apache-2.0

// Package facts is the record of a node that doctor prints and bench
// writes into its result file: OS, kernel, audit state and rules, eBPF
// features, 32-bit processes, the disk under the audit log. It is a leaf
// that imports nothing of the project and reads nothing, so that both
// tracer/node (which collects and judges it) and bench/result (whose
// schema embeds it, read by report on any system) can build on it.
package facts

// Facts is the node a result file comes from: what `tracer doctor`
// reports (tracer/node collects it, and names these types as its own) and
// bench records. A nil *bool or empty
// string means "not known" (not readable without root, or not probed); the
// reason is listed in NeedRoot or Notes.
type Facts struct {
	Hostname string    `json:"hostname"`
	Kernel   string    `json:"kernel"`  // uname -r
	Machine  string    `json:"machine"` // uname -m
	OS       OSRelease `json:"os"`      // /etc/os-release
	Root     bool      `json:"collected_as_root"`

	Audit   Audit `json:"audit"`
	EBPF    EBPF  `json:"ebpf"`
	Procs   Procs `json:"procs"`
	LogDisk Disk  `json:"audit_log_disk"`

	// KernelConfig holds the CONFIG_ options that matter here (node.ConfigKeys),
	// "n" when the config was read and the option is absent.
	KernelConfig       map[string]string `json:"kernel_config,omitempty"`
	KernelConfigSource string            `json:"kernel_config_source,omitempty"`

	// NeedRoot names the facts that could not be read without root.
	NeedRoot []string `json:"need_root,omitempty"`
	// Notes are probes that failed for other reasons.
	Notes []string `json:"notes,omitempty"`
}

// OSRelease is the part of /etc/os-release doctor uses.
type OSRelease struct {
	ID         string `json:"id"` // rhel, centos, rocky, almalinux, debian, ...
	IDLike     string `json:"id_like,omitempty"`
	VersionID  string `json:"version_id"`  // 8.6, 9.4, 7, 12
	PrettyName string `json:"pretty_name"` // Red Hat Enterprise Linux 8.6 (Ootpa)
}

// Audit is the state of the kernel's audit subsystem.
type Audit struct {
	// Supported: the kernel has audit (a NETLINK_AUDIT socket opens).
	Supported *bool `json:"supported"`
	// Status is the kernel's audit status; nil when it could not be read
	// (reading it needs CAP_AUDIT_CONTROL).
	Status *AuditStatus `json:"status,omitempty"`
	// Rules are the loaded rules in auditctl syntax (as `auditctl -l` prints
	// them); RulesRead says whether they could be read at all.
	RulesRead   bool     `json:"rules_read"`
	Rules       []string `json:"rules,omitempty"`
	TracerRules int      `json:"tracer_rules"` // rules whose key is the tracer's
	// Auditd says whether an auditd process runs (from /proc, without root).
	Auditd bool `json:"auditd_running"`
}

// AuditStatus mirrors the kernel's struct audit_status.
type AuditStatus struct {
	Enabled         uint32 `json:"enabled"` // 0 off, 1 on, 2 locked (immutable until reboot)
	Failure         uint32 `json:"failure"`
	PID             uint32 `json:"pid"`      // the audit daemon's pid, 0 if none
	PIDComm         string `json:"pid_comm"` // its comm, from /proc
	RateLimit       uint32 `json:"rate_limit"`
	BacklogLimit    uint32 `json:"backlog_limit"`
	BacklogWaitTime uint32 `json:"backlog_wait_time"` // in kernel ticks (1/HZ s), as auditctl -s prints it
	Backlog         uint32 `json:"backlog"`
	Lost            uint32 `json:"lost"`
}

// State names Enabled: "disabled", "enabled" or "locked".
func (s *AuditStatus) State() string {
	switch s.Enabled {
	case 0:
		return "disabled"
	case 1:
		return "enabled"
	case 2:
		return "locked"
	}
	return "unknown"
}

// EBPF is what the kernel offers eBPF programs.
type EBPF struct {
	BPFSyscall         *bool  `json:"bpf_syscall"`         // the bpf(2) syscall exists (CONFIG_BPF_SYSCALL)
	BTF                *bool  `json:"btf"`                 // /sys/kernel/btf/vmlinux: CO-RE works
	RingBuf            *bool  `json:"ringbuf"`             // BPF_MAP_TYPE_RINGBUF (5.8, or backported)
	BTFTracepoints     *bool  `json:"btf_tracepoints"`     // tp_btf programs load and attach
	MmapData           *bool  `json:"mmap_data,omitempty"` // BPF_F_MMAPABLE array maps: global data user space shares (5.5)
	Fentry             *bool  `json:"fentry"`              // fentry programs load and attach
	SyscallTracepoints *bool  `json:"syscall_tracepoints"` // events/syscalls in tracefs (CONFIG_FTRACE_SYSCALLS)
	Kprobes            *bool  `json:"kprobes"`             // CONFIG_KPROBES, kprobe_events in tracefs
	Tracefs            string `json:"tracefs,omitempty"`   // where tracefs is mounted, "" if not
	TracefsProbed      bool   `json:"tracefs_probed"`      // tracefs was mounted in a private namespace to look
	Lockdown           string `json:"lockdown,omitempty"`  // none, integrity, confidentiality; "" if no lockdown LSM
	UnprivilegedBPF    *int   `json:"unprivileged_bpf_disabled,omitempty"`
	JITEnabled         *int   `json:"bpf_jit_enable,omitempty"`
}

// Procs is the 32-bit process scan: when a 32-bit process runs, audit rules
// need b32 copies (their syscall numbers differ).
type Procs struct {
	Scanned    int    `json:"scanned"`    // user-space processes whose executable was read
	Unreadable int    `json:"unreadable"` // processes whose executable could not be read
	Bits32     []Proc `json:"bits32,omitempty"`
	// IA32 says whether the kernel can run 32-bit x86 programs (CONFIG_IA32_EMULATION).
	IA32 *bool `json:"ia32_emulation,omitempty"`
}

// Proc is one process.
type Proc struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
	Exe  string `json:"exe,omitempty"`
}

// Disk is the block device under the audit log (or under bench's logs): on
// a spinning disk auditd's writes cost an order of magnitude more (a 0.6 s
// script took 4.4 s on SSD, 39.5 s on HDD).
type Disk struct {
	Path       string   `json:"path"`  // /var/log/audit, or / when it is missing
	Mount      string   `json:"mount"` // the mount point that holds it
	FSType     string   `json:"fstype,omitempty"`
	Source     string   `json:"source,omitempty"`     // /dev/mapper/rhel-root
	Device     string   `json:"device,omitempty"`     // major:minor
	Disks      []string `json:"disks,omitempty"`      // the whole disks below it (vda, sda), through partitions, dm and md
	Rotational *bool    `json:"rotational,omitempty"` // any of Disks reports rotational
	// Virtual: every one of Disks is made up by the hypervisor or the
	// kernel (virtio, Xen, loop, zram, ...), so what medium lies below is
	// not known.
	Virtual bool `json:"virtual,omitempty"`
}

// Kind is "hdd", "ssd", "virtual" (a rotational flag says nothing of the
// medium below) or "unknown". Doctor and bench both judge disks by it.
func (d Disk) Kind() string {
	switch {
	case d.Rotational == nil:
		return "unknown"
	case d.Virtual:
		return "virtual"
	case *d.Rotational:
		return "hdd"
	}
	return "ssd"
}

// Has32Bit reports whether a 32-bit process was seen.
func (f *Facts) Has32Bit() bool { return len(f.Procs.Bits32) > 0 }

// LockdownMode is the kernel lockdown mode in force (none, integrity,
// confidentiality); "" when it is not known, and lsm says whether the
// kernel has the lockdown LSM at all (then securityfs was not mounted to
// read its mode). Doctor and bench's report both word it from this.
func (f *Facts) LockdownMode() (mode string, lsm bool) {
	if f.EBPF.Lockdown != "" {
		return f.EBPF.Lockdown, true
	}
	return "", f.Config("CONFIG_SECURITY_LOCKDOWN_LSM") == "y"
}

// LockdownText says the lockdown mode for people: the mode, or why it is
// not known.
func (f *Facts) LockdownText() string {
	mode, lsm := f.LockdownMode()
	switch {
	case mode != "":
		return mode
	case lsm:
		return "unknown (securityfs not mounted)"
	case f.KernelConfig == nil:
		return "unknown (no kernel config)"
	}
	return "no lockdown LSM"
}

// Config returns a kernel config value ("y", "m", "n") or "" when unknown.
func (f *Facts) Config(key string) string {
	if f.KernelConfig == nil {
		return ""
	}
	return f.KernelConfig[key]
}
