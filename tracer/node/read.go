// SPDX-License-Identifier: Apache-2.0

package node

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tracer-dev/tracer/tracer/host"
)

// Reader reads node files under Root: "/" on the running node (the zero
// Reader reads it too), a recorded tree (built by buildRHEL86Root) in
// tests. It reads only; the probes that need the kernel (netlink, bpf)
// live in Collect. Its exported methods are the one reader of each fact
// for the rest of the project; the mount table, the disks and the ELF
// class of a process are read by package host, which packages that node
// imports use too, and recorded here as the node's facts.
type Reader struct {
	Root string
}

func (r Reader) root() string {
	if r.Root == "" {
		return "/"
	}
	return r.Root
}

func (r Reader) path(p string) string { return filepath.Join(r.root(), p) }

func (r Reader) readString(p string) (string, error) {
	b, err := os.ReadFile(r.path(p))
	return string(b), err
}

func (r Reader) exists(p string) bool {
	_, err := os.Stat(r.path(p))
	return err == nil
}

// FileFacts is what Collect reads from files, without the probes that
// need the kernel: all a recorded tree can say.
func (r Reader) FileFacts() Facts {
	var f Facts
	r.readFacts(&f)
	return f
}

// readFacts fills every fact that comes from files: release, kernel, kernel
// config, BTF, lockdown, sysctls, tracefs, 32-bit processes, the log disk,
// whether auditd runs. Facts that need the kernel are left for the probes.
func (r Reader) readFacts(f *Facts) {
	if s, err := r.readString("/etc/os-release"); err == nil {
		f.OS = ParseOSRelease(s)
	} else if s, err := r.readString("/etc/redhat-release"); err == nil {
		f.OS = ParseRedhatRelease(s)
	} else {
		f.Notes = append(f.Notes, "no /etc/os-release")
	}
	if s, err := r.readString("/proc/sys/kernel/osrelease"); err == nil {
		f.Kernel = strings.TrimSpace(s)
	}
	if s, err := r.readString("/proc/sys/kernel/hostname"); err == nil {
		f.Hostname = strings.TrimSpace(s)
	}

	if cfg, src, err := r.KernelConfig(f.Kernel, ConfigKeys); err == nil {
		f.KernelConfig, f.KernelConfigSource = cfg, src
	} else {
		f.Notes = append(f.Notes, "no kernel config (/proc/config.gz, /boot/config-"+f.Kernel+")")
	}

	e := &f.EBPF
	e.BTF = Bool(r.exists("/sys/kernel/btf/vmlinux"))
	if mode, err := r.Lockdown(); err == nil {
		e.Lockdown = mode
	}
	if v, err := r.readInt("/proc/sys/kernel/unprivileged_bpf_disabled"); err == nil {
		e.UnprivilegedBPF = Int(v)
		e.BPFSyscall = Bool(true)
	}
	if v, err := r.readInt("/proc/sys/net/core/bpf_jit_enable"); err == nil {
		e.JITEnabled = Int(v)
	}
	if c := f.Config("CONFIG_BPF_SYSCALL"); c != "" {
		e.BPFSyscall = Bool(c == "y")
	}
	if c := f.Config("CONFIG_KPROBES"); c != "" {
		e.Kprobes = Bool(c == "y")
	}
	if c := f.Config("CONFIG_FTRACE_SYSCALLS"); c != "" {
		e.SyscallTracepoints = Bool(c == "y")
	}
	if c := f.Config("CONFIG_IA32_EMULATION"); c != "" {
		f.Procs.IA32 = Bool(c == "y")
	}

	mounts, err := host.Mounts(r.path("/proc"))
	if err != nil {
		f.Notes = append(f.Notes, "cannot read /proc/self/mountinfo")
	}
	for _, m := range mounts {
		if m.FSType == "tracefs" && e.Tracefs == "" {
			e.Tracefs = m.MountPoint
		}
	}
	if e.Tracefs != "" {
		r.readTracefs(e, e.Tracefs)
	}
	if r.exists("/sys/kernel/debug/kprobes/list") {
		e.Kprobes = Bool(true)
	}

	f.Procs.Scanned, f.Procs.Unreadable, f.Procs.Bits32, f.Audit.Auditd = r.scanProcs()
	if f.Procs.Unreadable > 0 && !f.Root {
		f.NeedRoot = append(f.NeedRoot, fmt.Sprintf("32-bit scan: the executables of %d processes of other users", f.Procs.Unreadable))
	}

	f.LogDisk = r.logDisk(mounts)
}

// readTracefs looks for syscall tracepoints and kprobe_events under a tracefs
// mounted at dir (relative to Root).
func (r Reader) readTracefs(e *EBPF, dir string) {
	e.SyscallTracepoints = Bool(r.exists(filepath.Join(dir, "events/syscalls/sys_enter_kill")) ||
		r.exists(filepath.Join(dir, "events/syscalls")))
	if r.exists(filepath.Join(dir, "kprobe_events")) {
		e.Kprobes = Bool(true)
	} else if e.Kprobes == nil {
		e.Kprobes = Bool(false)
	}
}

func (r Reader) readInt(p string) (int, error) {
	s, err := r.readString(p)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(s))
}

// KernelConfig reads the build config of the running kernel (release is
// its uname -r) where distributions keep it: /proc/config.gz
// (CONFIG_IKCONFIG_PROC), /boot/config-RELEASE (RHEL, Debian),
// /lib/modules/RELEASE/config (RHEL 9). It returns the values of keys
// ("n" for an option that is not set) and the file they came from.
// prometheus/procfs has no reader of the kernel config, nor of lockdown or
// jiffies (KernelHZ): these three are read here by hand.
func (r Reader) KernelConfig(release string, keys []string) (config map[string]string, source string, err error) {
	if b, err := os.ReadFile(r.path("/proc/config.gz")); err == nil {
		if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
			if m, err := ParseKernelConfig(zr, keys); err == nil {
				return m, "/proc/config.gz", nil
			}
		}
	}
	if release == "" {
		return nil, "", errors.New("no kernel config in /proc/config.gz, and no kernel release to look for one")
	}
	for _, p := range []string{"/boot/config-" + release, "/lib/modules/" + release + "/config"} {
		if f, err := os.Open(r.path(p)); err == nil {
			m, err := ParseKernelConfig(f, keys)
			f.Close()
			if err == nil {
				return m, p, nil
			}
		}
	}
	return nil, "", fmt.Errorf("no kernel config in /proc/config.gz, /boot/config-%s or /lib/modules/%s/config", release, release)
}

// Lockdown returns the kernel lockdown mode in force (host.Lockdown, under
// the reader's root).
func (r Reader) Lockdown() (string, error) { return host.Lockdown(r.root()) }

// scanProcs reads the ELF class of every process's executable: 32-bit
// processes make the b32 audit rules necessary. Kernel threads (no
// executable) are not counted.
func (r Reader) scanProcs() (scanned, unreadable int, bits32 []Proc, auditd bool) {
	procRoot := r.path("/proc")
	err := host.ScanProcs(procRoot, func(p host.Proc) bool {
		if p.Comm == "auditd" {
			auditd = true
		}
		if p.Err != nil {
			unreadable++
			return true
		}
		scanned++
		if p.Class == 32 {
			bits32 = append(bits32, Proc{PID: p.PID, Comm: p.Comm, Exe: host.ExePath(procRoot, p.PID)})
		}
		return true
	})
	if err != nil {
		return 0, 0, nil, false
	}
	sort.Slice(bits32, func(i, j int) bool { return bits32[i].PID < bits32[j].PID })
	return scanned, unreadable, bits32, auditd
}

// logDisk finds the disks under /var/log/audit (or / when it is missing) and
// whether one of them spins.
func (r Reader) logDisk(mounts []host.Mount) Disk {
	path := "/var/log/audit"
	if !r.exists(path) {
		path = "/"
	}
	return r.diskAt(mounts, path)
}

// DiskAt describes the block device that holds path (relative to Root):
// host.DiskAt, the one reader of disks, as the node's facts record it.
func (r Reader) DiskAt(path string) Disk {
	mounts, _ := r.Mounts()
	return r.diskAt(mounts, path)
}

func (r Reader) diskAt(mounts []host.Mount, path string) Disk {
	return Disk(host.DiskAt(r.root(), mounts, path))
}

// DiskOfDevice describes block device dev ("major:minor"), as DiskAt does.
func (r Reader) DiskOfDevice(dev string) Disk {
	return Disk(host.DiskOfDevice(r.root(), dev))
}

// Mounts reads this process's mount table (the one reader of it:
// host.Mounts, which packages below node use directly).
func (r Reader) Mounts() ([]host.Mount, error) {
	return host.Mounts(r.path("/proc"))
}

// CgroupV2Mount is where the unified cgroup hierarchy is mounted, or "".
func (r Reader) CgroupV2Mount() string {
	mounts, err := r.Mounts()
	if err != nil {
		return ""
	}
	m, _ := host.CgroupV2Mount(mounts)
	return m
}

// CgroupV1Mount is where the v1 hierarchy with controller is mounted, or "".
func (r Reader) CgroupV1Mount(controller string) string {
	mounts, err := r.Mounts()
	if err != nil {
		return ""
	}
	m, _ := host.CgroupV1Mount(mounts, controller)
	return m
}

// ParseOSRelease parses /etc/os-release (os-release(5)).
func ParseOSRelease(s string) OSRelease {
	var o OSRelease
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		v = unquote(v)
		switch k {
		case "ID":
			o.ID = v
		case "ID_LIKE":
			o.IDLike = v
		case "VERSION_ID":
			o.VersionID = v
		case "PRETTY_NAME":
			o.PrettyName = v
		}
	}
	return o
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
		v = strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\$`, `$`, "\\`", "`").Replace(v)
	}
	return v
}

// ParseRedhatRelease parses /etc/redhat-release ("CentOS Linux release
// 7.9.2009 (Core)") for nodes too old to have os-release.
func ParseRedhatRelease(s string) OSRelease {
	s = strings.TrimSpace(s)
	o := OSRelease{PrettyName: s, ID: "rhel"}
	lower := strings.ToLower(s)
	switch {
	case strings.HasPrefix(lower, "centos"):
		o.ID = "centos"
	case strings.HasPrefix(lower, "rocky"):
		o.ID = "rocky"
	case strings.HasPrefix(lower, "almalinux"):
		o.ID = "almalinux"
	}
	if i := strings.Index(lower, "release "); i >= 0 {
		v := strings.Fields(s[i+len("release "):])
		if len(v) > 0 {
			o.VersionID = v[0]
		}
	}
	return o
}

// ParseKernelConfig keeps the values of keys in a kernel .config; absent
// keys (and "# CONFIG_X is not set") read as "n".
func ParseKernelConfig(rd io.Reader, keys []string) (map[string]string, error) {
	m := make(map[string]string, len(keys))
	for _, k := range keys {
		m[k] = "n"
	}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.HasPrefix(k, "CONFIG_") {
			continue
		}
		n++
		if _, want := m[k]; want {
			m[k] = unquote(v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading kernel config: %w", err)
	}
	if n == 0 {
		return nil, errors.New("kernel config has no CONFIG_ lines")
	}
	return m, nil
}

// ParseLockdown is host.ParseLockdown, kept under doctor's name.
func ParseLockdown(s string) string { return host.ParseLockdown(s) }

// KernelHZ is the kernel's tick rate (CONFIG_HZ), the unit of audit's
// backlog wait figures: from the kernel config (KernelConfig) or, without
// one, by watching jiffies in /proc/timer_list for 200 ms and taking the
// nearest rate a kernel can be built with. The error says neither worked.
func (r Reader) KernelHZ() (int, error) {
	release, _ := r.readString("/proc/sys/kernel/osrelease")
	if cfg, _, err := r.KernelConfig(strings.TrimSpace(release), []string{"CONFIG_HZ"}); err == nil {
		if hz, err := strconv.Atoi(cfg["CONFIG_HZ"]); err == nil && hz > 0 {
			return hz, nil
		}
	}
	j0, t0, err := r.jiffies()
	if err != nil {
		return 0, fmt.Errorf("reading the kernel's HZ: no CONFIG_HZ, and %w", err)
	}
	time.Sleep(200 * time.Millisecond)
	j1, t1, err := r.jiffies()
	if err != nil {
		return 0, fmt.Errorf("reading the kernel's HZ: no CONFIG_HZ, and %w", err)
	}
	return NearestHZ(float64(j1-j0) / t1.Sub(t0).Seconds()), nil
}

// NearestHZ is the CONFIG_HZ choice nearest a measured tick rate.
func NearestHZ(rate float64) int {
	best := 0
	for _, hz := range []int{100, 250, 300, 1000} {
		if best == 0 || math.Abs(rate-float64(hz)) < math.Abs(rate-float64(best)) {
			best = hz
		}
	}
	return best
}

// jiffies reads the jiffies counter of /proc/timer_list, and when.
func (r Reader) jiffies() (uint64, time.Time, error) {
	f, err := os.Open(r.path("/proc/timer_list"))
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("reading jiffies: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "jiffies: "); ok {
			j, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return j, time.Now(), err
		}
	}
	return 0, time.Time{}, errors.New("no jiffies in /proc/timer_list")
}
