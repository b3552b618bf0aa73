package node

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Reader reads node files under Root: "/" on the running node, a recorded
// tree (testdata/roots/rhel86) in tests. It reads only; the probes that need
// the kernel (netlink, bpf) live in Collect.
type Reader struct {
	Root string
}

func (r Reader) path(p string) string { return filepath.Join(r.Root, p) }

func (r Reader) readString(p string) (string, error) {
	b, err := os.ReadFile(r.path(p))
	return string(b), err
}

func (r Reader) exists(p string) bool {
	_, err := os.Stat(r.path(p))
	return err == nil
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

	f.KernelConfig, f.KernelConfigSource = r.kernelConfig(f.Kernel)
	if f.KernelConfig == nil {
		f.Notes = append(f.Notes, "no kernel config (/proc/config.gz, /boot/config-"+f.Kernel+")")
	}

	e := &f.EBPF
	e.BTF = Bool(r.exists("/sys/kernel/btf/vmlinux"))
	if s, err := r.readString("/sys/kernel/security/lockdown"); err == nil {
		e.Lockdown = ParseLockdown(s)
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

	var mounts []Mount
	if s, err := r.readString("/proc/self/mountinfo"); err == nil {
		mounts = ParseMountinfo(s)
	} else {
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

// kernelConfig reads the config of the running kernel where distributions
// keep it: /proc/config.gz (CONFIG_IKCONFIG_PROC), /boot/config-RELEASE (RHEL,
// Debian), /lib/modules/RELEASE/config (RHEL 9).
func (r Reader) kernelConfig(release string) (map[string]string, string) {
	if b, err := os.ReadFile(r.path("/proc/config.gz")); err == nil {
		if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
			if m, err := ParseKernelConfig(zr); err == nil {
				return m, "/proc/config.gz"
			}
		}
	}
	if release == "" {
		return nil, ""
	}
	for _, p := range []string{"/boot/config-" + release, "/lib/modules/" + release + "/config"} {
		if f, err := os.Open(r.path(p)); err == nil {
			m, err := ParseKernelConfig(f)
			f.Close()
			if err == nil {
				return m, p
			}
		}
	}
	return nil, ""
}

// scanProcs reads the ELF class of every process's executable: 32-bit
// processes make the b32 audit rules necessary. Kernel threads (no
// executable) are not counted.
func (r Reader) scanProcs() (scanned, unreadable int, bits32 []Proc, auditd bool) {
	ents, err := os.ReadDir(r.path("/proc"))
	if err != nil {
		return 0, 0, nil, false
	}
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		dir := "/proc/" + ent.Name()
		comm, _ := r.readString(dir + "/comm")
		comm = strings.TrimSpace(comm)
		if comm == "auditd" {
			auditd = true
		}
		hdr, err := r.readHead(dir+"/exe", 5)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, io.EOF):
			continue // kernel thread or exited
		case err != nil:
			unreadable++
			continue
		}
		scanned++
		if ELFClass(hdr) == 32 {
			exe, _ := os.Readlink(r.path(dir + "/exe"))
			bits32 = append(bits32, Proc{PID: pid, Comm: comm, Exe: exe})
		}
	}
	sort.Slice(bits32, func(i, j int) bool { return bits32[i].PID < bits32[j].PID })
	return scanned, unreadable, bits32, auditd
}

func (r Reader) readHead(p string, n int) ([]byte, error) {
	f, err := os.Open(r.path(p))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := io.ReadFull(f, b); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, io.EOF
		}
		return nil, err
	}
	return b, nil
}

// logDisk finds the disks under /var/log/audit (or / when it is missing) and
// whether one of them spins.
func (r Reader) logDisk(mounts []Mount) Disk {
	d := Disk{Path: "/var/log/audit"}
	if !r.exists(d.Path) {
		d.Path = "/"
	}
	m, ok := MountFor(mounts, d.Path)
	if !ok {
		return d
	}
	d.Mount, d.FSType, d.Source = m.MountPoint, m.FSType, m.Source
	dev := m.Device
	// btrfs and overlay report an anonymous device (major 0): use the source.
	if strings.HasPrefix(dev, "0:") && strings.HasPrefix(m.Source, "/dev/") {
		if s, err := r.readString("/sys/class/block/" + filepath.Base(m.Source) + "/dev"); err == nil {
			dev = strings.TrimSpace(s)
		}
	}
	d.Device = dev
	if strings.HasPrefix(dev, "0:") {
		return d
	}
	disks := r.wholeDisks("/sys/dev/block/"+dev, 0)
	sort.Strings(disks)
	d.Disks = disks
	for _, name := range disks {
		v, err := r.readInt("/sys/block/" + name + "/queue/rotational")
		if err != nil {
			continue
		}
		if d.Rotational == nil {
			d.Rotational = Bool(false)
		}
		if v == 1 {
			d.Rotational = Bool(true)
		}
	}
	return d
}

// wholeDisks resolves a block device (a /sys path relative to Root) to the
// whole disks it lives on: a partition's parent, a device mapper or md
// device's slaves, recursively.
func (r Reader) wholeDisks(sysPath string, depth int) []string {
	if depth > 8 {
		return nil
	}
	real, err := filepath.EvalSymlinks(r.path(sysPath))
	if err != nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(real, "partition")); err == nil {
		real = filepath.Dir(real)
	}
	slaves, _ := os.ReadDir(filepath.Join(real, "slaves"))
	if len(slaves) == 0 {
		return []string{filepath.Base(real)}
	}
	var out []string
	for _, s := range slaves {
		rel, err := filepath.Rel(r.Root, filepath.Join(real, "slaves", s.Name()))
		if err != nil {
			continue
		}
		for _, d := range r.wholeDisks("/"+rel, depth+1) {
			if !contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
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

// ParseKernelConfig keeps the ConfigKeys of a kernel .config; absent keys
// (and "# CONFIG_X is not set") read as "n".
func ParseKernelConfig(rd io.Reader) (map[string]string, error) {
	m := make(map[string]string, len(ConfigKeys))
	for _, k := range ConfigKeys {
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

// ParseLockdown returns the active mode of /sys/kernel/security/lockdown
// ("none [integrity] confidentiality" -> "integrity").
func ParseLockdown(s string) string {
	i := strings.IndexByte(s, '[')
	j := strings.IndexByte(s, ']')
	if i < 0 || j < i {
		return strings.TrimSpace(s)
	}
	return s[i+1 : j]
}

// ELFClass returns 32 or 64 for an ELF header, 0 when b is not ELF.
func ELFClass(b []byte) int {
	if len(b) < 5 || string(b[:4]) != "\x7fELF" {
		return 0
	}
	switch b[4] {
	case 1:
		return 32
	case 2:
		return 64
	}
	return 0
}

// Mount is one line of /proc/self/mountinfo.
type Mount struct {
	Device     string // major:minor
	MountPoint string
	FSType     string
	Source     string
}

// ParseMountinfo parses /proc/PID/mountinfo (proc(5)).
func ParseMountinfo(s string) []Mount {
	var out []Mount
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		sep := -1
		for i, x := range f {
			if x == "-" && i >= 6 {
				sep = i
				break
			}
		}
		if sep < 0 || len(f) < sep+3 {
			continue
		}
		out = append(out, Mount{
			Device:     f[2],
			MountPoint: unescapeMount(f[4]),
			FSType:     f[sep+1],
			Source:     unescapeMount(f[sep+2]),
		})
	}
	return out
}

// unescapeMount undoes the octal escapes of mountinfo (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// MountFor returns the mount that holds path: the longest mount point that
// is a prefix of it, the last one mounted when several stack.
func MountFor(mounts []Mount, path string) (Mount, bool) {
	best, found := Mount{}, false
	for _, m := range mounts {
		mp := m.MountPoint
		if path != mp && mp != "/" && !strings.HasPrefix(path, strings.TrimSuffix(mp, "/")+"/") {
			continue
		}
		if !found || len(mp) >= len(best.MountPoint) {
			best, found = m, true
		}
	}
	return best, found
}
