// SPDX-License-Identifier: Apache-2.0

package node

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/node/nodetest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestParseOSRelease(t *testing.T) {
	cases := []struct {
		name, text   string
		want         OSRelease
		major, minor int
		rhel         bool
	}{
		{"rhel 7.9", `NAME="Red Hat Enterprise Linux Server"
VERSION="7.9 (Maipo)"
ID="rhel"
ID_LIKE="fedora"
VERSION_ID="7.9"
PRETTY_NAME="Red Hat Enterprise Linux Server 7.9 (Maipo)"
`, OSRelease{ID: "rhel", IDLike: "fedora", VersionID: "7.9", PrettyName: "Red Hat Enterprise Linux Server 7.9 (Maipo)"}, 7, 9, true},
		{"centos 7", `NAME="CentOS Linux"
VERSION="7 (Core)"
ID="centos"
ID_LIKE="rhel fedora"
VERSION_ID="7"
PRETTY_NAME="CentOS Linux 7 (Core)"
`, OSRelease{ID: "centos", IDLike: "rhel fedora", VersionID: "7", PrettyName: "CentOS Linux 7 (Core)"}, 7, -1, true},
		{"rocky 8.6", `NAME="Rocky Linux"
ID="rocky"
ID_LIKE="rhel centos fedora"
VERSION_ID="8.6"
PRETTY_NAME="Rocky Linux 8.6 (Green Obsidian)"
`, OSRelease{ID: "rocky", IDLike: "rhel centos fedora", VersionID: "8.6", PrettyName: "Rocky Linux 8.6 (Green Obsidian)"}, 8, 6, true},
		{"alma 9.4", `NAME="AlmaLinux"
ID="almalinux"
ID_LIKE="rhel centos fedora"
VERSION_ID="9.4"
PRETTY_NAME="AlmaLinux 9.4 (Seafoam Ocelot)"
`, OSRelease{ID: "almalinux", IDLike: "rhel centos fedora", VersionID: "9.4", PrettyName: "AlmaLinux 9.4 (Seafoam Ocelot)"}, 9, 4, true},
		{"oracle 8.10, unquoted", "NAME=\"Oracle Linux Server\"\nID=\"ol\"\nVERSION_ID=8.10\nPRETTY_NAME='Oracle Linux Server 8.10'\n",
			OSRelease{ID: "ol", VersionID: "8.10", PrettyName: "Oracle Linux Server 8.10"}, 8, 10, true},
		{"debian 12", "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nID=debian\n# a comment\n",
			OSRelease{ID: "debian", VersionID: "12", PrettyName: "Debian GNU/Linux 12 (bookworm)"}, 0, 0, false},
	}
	for _, c := range cases {
		got := ParseOSRelease(c.text)
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
		maj, mn, ok := RHELRelease(got)
		if ok != c.rhel || maj != c.major || mn != c.minor {
			t.Errorf("%s: RHELRelease = %d, %d, %v; want %d, %d, %v", c.name, maj, mn, ok, c.major, c.minor, c.rhel)
		}
	}
}

func TestParseRedhatRelease(t *testing.T) {
	for in, want := range map[string]OSRelease{
		"CentOS Linux release 7.9.2009 (Core)\n":                {ID: "centos", VersionID: "7.9.2009", PrettyName: "CentOS Linux release 7.9.2009 (Core)"},
		"Red Hat Enterprise Linux Server release 7.6 (Maipo)\n": {ID: "rhel", VersionID: "7.6", PrettyName: "Red Hat Enterprise Linux Server release 7.6 (Maipo)"},
	} {
		if got := ParseRedhatRelease(in); got != want {
			t.Errorf("%q: got %+v, want %+v", in, got, want)
		}
	}
}

func TestSmallParsers(t *testing.T) {
	for in, want := range map[string]string{
		"[none] integrity confidentiality\n": "none",
		"none [integrity] confidentiality\n": "integrity",
		"none integrity [confidentiality]":   "confidentiality",
	} {
		if got := ParseLockdown(in); got != want {
			t.Errorf("ParseLockdown(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]int{"\x7fELF\x01": 32, "\x7fELF\x02\x01": 64, "#!/bi": 0, "\x7fEL": 0, "\x7fELF\x03": 0} {
		if got := host.ELFClass([]byte(in)); got != want {
			t.Errorf("ELFClass(%q) = %d, want %d", in, got, want)
		}
	}
	for in, want := range map[string][2]int{
		"3.10.0-1160.108.1.el7.x86_64": {3, 10}, "4.18.0-372.9.1.el8.x86_64": {4, 18},
		"5.14.0-427.13.1.el9_4.x86_64": {5, 14}, "6.18.44-fc-v782": {6, 18}, "6.1": {6, 1},
	} {
		maj, mn, ok := KernelVersion(in)
		if !ok || maj != want[0] || mn != want[1] {
			t.Errorf("KernelVersion(%q) = %d.%d %v", in, maj, mn, ok)
		}
	}
	if _, _, ok := KernelVersion("garbage"); ok {
		t.Error("KernelVersion(garbage) ok")
	}
	cfg, err := ParseKernelConfig(strings.NewReader("CONFIG_AUDIT=y\n# CONFIG_KPROBES is not set\nCONFIG_BPF_SYSCALL=y\nCONFIG_DEBUG_INFO_BTF=m\n"), ConfigKeys)
	if err != nil {
		t.Fatal(err)
	}
	if cfg["CONFIG_AUDIT"] != "y" || cfg["CONFIG_KPROBES"] != "n" || cfg["CONFIG_DEBUG_INFO_BTF"] != "m" || cfg["CONFIG_FTRACE_SYSCALLS"] != "n" {
		t.Errorf("kernel config: %v", cfg)
	}
	if _, err := ParseKernelConfig(strings.NewReader("not a config\n"), ConfigKeys); err == nil {
		t.Error("ParseKernelConfig accepted a file with no CONFIG_ line")
	}
}

// CountTracerRules counts the rules of the tracer's key, read by
// auparse.RuleKey (whose test has every form of a key).
func TestCountTracerRules(t *testing.T) {
	rules := []string{
		"-a always,exit -F arch=b64 -S execve,execveat -F key=tracer",
		"-a always,exit -F arch=b64 -S kill -F a1=10 -k tracer",
		"-a always,exit -F arch=b64 -S kill -F a1=10 -F key=tracer-old", // not ours: cleanup keeps it too
		"-w /etc/shadow -p wa -k identity",
		"-a always,exit -F arch=b64 -S openat -F success=0",
	}
	if n := CountTracerRules(rules); n != 2 {
		t.Errorf("CountTracerRules = %d, want 2", n)
	}
}

func TestParseMountinfo(t *testing.T) {
	b, err := os.ReadFile("testdata/rhel86-root/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	proc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "self", "mountinfo"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	ms, err := host.Mounts(proc)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 7 {
		t.Fatalf("%d mounts, want 7", len(ms))
	}
	if m := ms[6]; m.MountPoint != "/srv/my data" || m.Device != "253:4" || m.FSType != "xfs" || m.Source != "/dev/mapper/rhel-data" {
		t.Errorf("escaped mount: %+v", m)
	}
	for path, want := range map[string]string{
		"/var/log/audit": "/var/log/audit", "/var/log/audit/audit.log": "/var/log/audit",
		"/var/log": "/", "/var/log/auditx": "/", "/boot/grub2": "/boot", "/": "/",
	} {
		m, ok := host.MountFor(ms, path)
		if !ok || m.MountPoint != want {
			t.Errorf("MountFor(%q) = %q, want %q", path, m.MountPoint, want)
		}
	}
}

// buildRHEL86Root lays out a recorded RHEL 8.6 node under a temporary root:
// the files of testdata/rhel86-root, sysfs with /var/log/audit on an LVM
// volume (dm-3) on a partition of a spinning disk, and /proc with a 32-bit
// process. It is built here because sysfs names hold colons, which Go
// module zips refuse.
func buildRHEL86Root(t *testing.T) string {
	t.Helper()
	tr := nodetest.New(t)
	root, file, link := tr.Root, tr.File, tr.Link
	rec := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata/rhel86-root", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	file("etc/os-release", rec("os-release"))
	file("proc/self/mountinfo", rec("mountinfo"))
	file("boot/config-4.18.0-372.9.1.el8.x86_64", rec("config"))
	file("proc/sys/kernel/osrelease", "4.18.0-372.9.1.el8.x86_64\n")
	file("proc/sys/kernel/hostname", "web-86-12\n")
	file("proc/sys/kernel/unprivileged_bpf_disabled", "1\n")
	file("proc/sys/net/core/bpf_jit_enable", "1\n")
	file("sys/kernel/btf/vmlinux", "")
	file("sys/kernel/security/lockdown", "[none] integrity confidentiality\n")
	file("sys/kernel/tracing/events/syscalls/sys_enter_kill/id", "1\n")
	file("sys/kernel/tracing/kprobe_events", "")
	file("var/log/audit/audit.log", "")

	sda := "sys/devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block/sda"
	sdb := "sys/devices/pci0000:00/0000:00:17.0/ata2/host1/target1:0:0/1:0:0:0/block/sdb"
	file(sda+"/queue/rotational", "0\n")
	file(sda+"/sda3/partition", "3\n")
	file(sdb+"/queue/rotational", "1\n")
	file(sdb+"/sdb2/partition", "2\n")
	link("sys/devices/virtual/block/dm-0/slaves/sda3", "../../../../pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block/sda/sda3")
	link("sys/devices/virtual/block/dm-3/slaves/sdb2", "../../../../pci0000:00/0000:00:17.0/ata2/host1/target1:0:0/1:0:0:0/block/sdb/sdb2")
	link("sys/dev/block/253:0", "../../devices/virtual/block/dm-0")
	link("sys/dev/block/253:3", "../../devices/virtual/block/dm-3")
	link("sys/block/sda", "../devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block/sda")
	link("sys/block/sdb", "../devices/pci0000:00/0000:00:17.0/ata2/host1/target1:0:0/1:0:0:0/block/sdb")

	elf64, elf32 := "\x7fELF\x02\x01\x01\x00", "\x7fELF\x01\x01\x01\x00"
	file("proc/1/comm", "systemd\n")
	file("proc/1/exe", elf64)
	file("proc/2/comm", "kthreadd\n") // a kernel thread: no exe
	file("proc/998/comm", "auditd\n")
	file("proc/998/exe", elf64)
	file("proc/4411/comm", "legacy-agent\n")
	file("proc/4411/exe", elf32)
	file("proc/4420/comm", "sh\n")
	file("proc/4420/exe", "#!/bin/sh\n") // not ELF: counted, not 32-bit
	return root
}

// TestReaderRHEL86 reads a recorded RHEL 8.6 tree and expects every
// file-based fact.
func TestReaderRHEL86(t *testing.T) {
	root := buildRHEL86Root(t)
	var f Facts
	Reader{Root: root}.readFacts(&f)

	if want := (OSRelease{ID: "rhel", IDLike: "fedora", VersionID: "8.6", PrettyName: "Red Hat Enterprise Linux 8.6 (Ootpa)"}); f.OS != want {
		t.Errorf("os %+v", f.OS)
	}
	if f.Kernel != "4.18.0-372.9.1.el8.x86_64" || f.Hostname != "web-86-12" {
		t.Errorf("kernel %q hostname %q", f.Kernel, f.Hostname)
	}
	if f.KernelConfigSource != "/boot/config-4.18.0-372.9.1.el8.x86_64" || f.Config("CONFIG_FTRACE_SYSCALLS") != "y" || f.Config("CONFIG_AUDITSYSCALL") != "y" {
		t.Errorf("config from %q: %v", f.KernelConfigSource, f.KernelConfig)
	}
	e := f.EBPF
	if !Yes(e.BTF) || !Yes(e.BPFSyscall) || !Yes(e.SyscallTracepoints) || !Yes(e.Kprobes) || e.Tracefs != "/sys/kernel/tracing" ||
		e.Lockdown != "none" || e.UnprivilegedBPF == nil || *e.UnprivilegedBPF != 1 || e.JITEnabled == nil || *e.JITEnabled != 1 {
		t.Errorf("ebpf %+v", e)
	}
	if e.RingBuf != nil || e.Fentry != nil || e.BTFTracepoints != nil {
		t.Errorf("the reader must leave the kernel probes unknown: %+v", e)
	}
	wantProcs := Procs{Scanned: 4, Bits32: []Proc{{PID: 4411, Comm: "legacy-agent"}}, IA32: Bool(true)}
	if !reflect.DeepEqual(f.Procs, wantProcs) {
		t.Errorf("procs %+v, want %+v", f.Procs, wantProcs)
	}
	if !f.Audit.Auditd {
		t.Error("auditd not seen running")
	}
	wantDisk := Disk{Path: "/var/log/audit", Mount: "/var/log/audit", FSType: "xfs", Source: "/dev/mapper/rhel-audit",
		Device: "253:3", Disks: []string{"sdb"}, Rotational: Bool(true)}
	if !reflect.DeepEqual(f.LogDisk, wantDisk) {
		t.Errorf("log disk %+v, want %+v", f.LogDisk, wantDisk)
	}
	if f.LogDisk.Kind() != "hdd" {
		t.Errorf("kind %s", f.LogDisk.Kind())
	}

	// The one reader of disks says the same, disk by disk.
	if got := (Reader{Root: root}).DiskOfDevice("253:3"); !reflect.DeepEqual(got.Disks, []string{"sdb"}) || got.Kind() != "hdd" {
		t.Errorf("disk 253:3: %+v, want sdb, hdd", got)
	}
	if got := (Reader{Root: root}).DiskOfDevice("8:99"); got.Disks != nil || got.Kind() != "unknown" {
		t.Errorf("disk of an unknown device: %+v", got)
	}

	// Without /var/log/audit the disk under / is judged: dm-0 on an SSD.
	if err := os.RemoveAll(filepath.Join(root, "var/log/audit")); err != nil {
		t.Fatal(err)
	}
	var g Facts
	Reader{Root: root}.readFacts(&g)
	if d := g.LogDisk; d.Path != "/" || d.Device != "253:0" || !reflect.DeepEqual(d.Disks, []string{"sda"}) || d.Kind() != "ssd" {
		t.Errorf("root disk %+v", d)
	}
}

func loadFacts(t *testing.T, name string) Facts {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata/facts", name))
	if err != nil {
		t.Fatal(err)
	}
	var f Facts
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f
}

// TestVerdictsRHEL judges recorded facts of RHEL 7, 8.1, 8.2 (collected
// without root), 8.6 and 9.4 with STIG rules.
func TestVerdictsRHEL(t *testing.T) {
	type want struct {
		status  string
		reasons []string // substrings, in order
		notes   []string
	}
	cases := []struct {
		file        string
		audit, ebpf want
	}{
		{"rhel7.json",
			want{WorksLimits, []string{"older than 3.16", "auditd (pid 812) holds the audit PID", "spinning disk"}, []string{"no 32-bit process runs"}},
			want{Cannot, []string{"kernel 3.10.0-1160.108.1.el7.x86_64: the eBPF backend needs 4.18"}, nil}},
		{"rhel81.json",
			want{WorksLimits, []string{"auditd (pid 1021) holds the audit PID"}, nil},
			want{Cannot, []string{"no kernel BTF"}, nil}},
		{"rhel82.json",
			want{WorksLimits, []string{"audit state and rules unknown"}, nil},
			want{WorksLimits, []string{"no BPF ring buffer", "no BTF tracepoints or fentry"},
				[]string{"ring buffer assumed absent: RHEL 8.2 (not probed)", "BTF tracepoints assumed absent", "fentry assumed absent"}}},
		{"rhel86.json",
			want{WorksLimits, []string{"auditd (pid 998) holds the audit PID", "spinning disk", "backlog limit 64"},
				[]string{"lost 1274 audit records", "1 rule with the tracer's key", "1 32-bit process runs (e.g. legacy-agent)"}},
			want{Works, nil, nil}},
		{"rhel94-stig.json",
			want{WorksLimits, []string{"rules locked (enabled=2, e.g. STIG/CIS): tracer cannot add rules; it follows the node's rules by key: watch --backend audit --keys execpriv,", "auditd (pid 903)"}, nil},
			want{Works, nil, []string{"lockdown is in integrity mode"}}},
	}
	for _, c := range cases {
		f := loadFacts(t, c.file)
		vs := Verdicts(f)
		for _, w := range []struct {
			backend string
			want    want
		}{{"audit", c.audit}, {"ebpf", c.ebpf}} {
			v := VerdictFor(vs, w.backend)
			if v.Status != w.want.status {
				t.Errorf("%s %s: status %q, want %q (%v)", c.file, w.backend, v.Status, w.want.status, v.Reasons)
			}
			if len(v.Reasons) != len(w.want.reasons) {
				t.Errorf("%s %s: reasons %q, want %d", c.file, w.backend, v.Reasons, len(w.want.reasons))
				continue
			}
			for i, sub := range w.want.reasons {
				if !strings.Contains(v.Reasons[i], sub) {
					t.Errorf("%s %s: reason %d %q lacks %q", c.file, w.backend, i, v.Reasons[i], sub)
				}
			}
			for _, sub := range w.want.notes {
				if !strings.Contains(strings.Join(v.Notes, "\n"), sub) {
					t.Errorf("%s %s: notes %q lack %q", c.file, w.backend, v.Notes, sub)
				}
			}
		}
	}
}

// TestMulticastNoteOnOldKernels: before 3.16 (RHEL 7's 3.10 binds the
// group but delivers nothing) the way is auditd's plugin.
func TestMulticastNoteOnOldKernels(t *testing.T) {
	v := VerdictFor(Verdicts(loadFacts(t, "rhel7.json")), "audit")
	if !strings.Contains(v.Reasons[0], "older than 3.16") || !strings.Contains(v.Reasons[0], "watch --backend audit --from-auditd") {
		t.Errorf("RHEL 7: %q", v.Reasons[0])
	}
	v = VerdictFor(Verdicts(loadFacts(t, "rhel86.json")), "audit")
	if strings.Contains(strings.Join(v.Reasons, "\n"), "3.16") {
		t.Errorf("RHEL 8.6: %q", v.Reasons)
	}
}

// TestLockedVerdict: on a locked node, the verdict names the keys to
// follow, or, with no keyed rule that records events, the ways out.
func TestLockedVerdict(t *testing.T) {
	f := loadFacts(t, "rhel94-stig.json")
	v := VerdictFor(Verdicts(f), "audit")
	want := "rules locked (enabled=2, e.g. STIG/CIS): tracer cannot add rules; it follows the node's rules by key: watch --backend audit --keys execpriv,privileged-priv_change,priv_cmd,privileged-chage,privileged-passwd,privileged-mount,privileged-crontab (11 loaded rules record exec events; none records fork,signal; only what they select is seen)"
	if v.Status != WorksLimits || v.Reasons[0] != want {
		t.Errorf("STIG, locked:\n got  %s %q\n want %s %q", v.Status, v.Reasons[0], WorksLimits, want)
	}
	f.Audit.Rules = []string{"-w /etc/shadow -p wa -k identity", "-a always,exit -F arch=b64 -S kill"}
	v = VerdictFor(Verdicts(f), "audit")
	if v.Status != Cannot || !strings.Contains(v.Reasons[0], "no loaded rule with a key records exec, fork or signal syscalls") ||
		!strings.Contains(v.Reasons[0], "and reboot, or use --backend ebpf") {
		t.Errorf("locked without keyed rules: %s %q", v.Status, v.Reasons)
	}
}

// TestKnowledgeFillsOnlyUnknowns: the release table never overrides a probe.
func TestKnowledgeFillsOnlyUnknowns(t *testing.T) {
	f := loadFacts(t, "rhel82.json")
	f.EBPF.RingBuf = Bool(true) // a backport the table does not know of
	g, assumed := WithKnowledge(f)
	if !Yes(g.EBPF.RingBuf) {
		t.Error("knowledge overrode a probed ring buffer")
	}
	for _, a := range assumed {
		if strings.Contains(a, "ring buffer") {
			t.Errorf("assumed a probed fact: %s", a)
		}
	}
	if v := VerdictFor(Verdicts(f), "ebpf"); strings.Contains(strings.Join(v.Reasons, " "), "ring buffer") {
		t.Errorf("ring buffer reason with a probed ring buffer: %v", v.Reasons)
	}
	// Unknown RHEL 8.1 facts: no BTF, so cannot (but with --btf FILE).
	h := Facts{Kernel: "4.18.0-147.el8.x86_64", OS: OSRelease{ID: "rhel", VersionID: "8.1"}}
	if v := VerdictFor(Verdicts(h), "ebpf"); v.Status != Cannot || !strings.Contains(v.Reasons[0], "--btf FILE") {
		t.Errorf("bare RHEL 8.1 facts: %s %v", v.Status, v.Reasons)
	}
	k := Facts{Kernel: "5.14.0-427.13.1.el9_4.x86_64", OS: OSRelease{ID: "rocky", VersionID: "9.4"}}
	if v := VerdictFor(Verdicts(k), "ebpf"); v.Status != Works {
		t.Errorf("bare Rocky 9.4 facts: %s %v", v.Status, v.Reasons)
	}
}

func TestTaskNeverSilencesAudit(t *testing.T) {
	f := loadFacts(t, "rhel81.json")
	f.Audit.Rules = []string{"-a never,task"}
	if v := VerdictFor(Verdicts(f), "audit"); v.Status != Cannot || !strings.Contains(v.Reasons[0], "never,task") {
		t.Errorf("never,task: %s %v", v.Status, v.Reasons)
	}
}

// TestDoctorTextGolden pins doctor's text output on recorded facts
// (regenerate with go test -update).
func TestDoctorTextGolden(t *testing.T) {
	for _, name := range []string{"rhel7", "rhel82", "rhel86", "rhel94-stig"} {
		r := NewReport(loadFacts(t, name+".json"))
		r.Tax = []MeasuredTax{{Mode: "auditd", Ratio: 1.56, Source: "web-86-12.json", Hostname: "web-86-12"}}
		var buf bytes.Buffer
		if err := r.WriteText(&buf); err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata/doctor", name+".txt.golden")
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%s differs from %s (go test -update rewrites it):\n%s", name, golden, buf.String())
		}
	}
}

// TestReportJSONRoundTrip: doctor's JSON carries the facts a bench result
// embeds, and reads back equal.
func TestReportJSONRoundTrip(t *testing.T) {
	f := loadFacts(t, "rhel94-stig.json")
	r := NewReport(f)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Facts, f) || !reflect.DeepEqual(back.Verdicts, r.Verdicts) {
		t.Error("doctor JSON does not read back equal")
	}
	if back.RuleCost == nil || len(back.RuleCost.Findings) != 8 || back.RuleCost.ExitRules != 27 {
		t.Errorf("rule cost: %+v", back.RuleCost)
	}
}

// TestThirtyTwoBitUnknownWithoutRoot: a scan that read only some
// processes' executables (the others are other users') cannot say that
// none is 32-bit.
func TestThirtyTwoBitUnknownWithoutRoot(t *testing.T) {
	f := loadFacts(t, "rhel86.json")
	f.Root = false
	f.Procs = Procs{Scanned: 1, Unreadable: 86}
	r := NewReport(f)
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	if !strings.Contains(text, "unknown: read 1 of 87 processes") || strings.Contains(text, "none (b64 rules suffice)") {
		t.Errorf("32-bit processes after reading 1 of 87 without root:\n%s", text)
	}
	notes := strings.Join(VerdictFor(r.Verdicts, "audit").Notes, "\n")
	if strings.Contains(notes, "no 32-bit process runs") || !strings.Contains(notes, "32-bit processes unknown") {
		t.Errorf("audit notes after reading 1 of 87 without root: %q", notes)
	}
	// As root, an executable gone between listing and reading changes
	// nothing: the processes that remain were read.
	f.Root = true
	notes = strings.Join(VerdictFor(Verdicts(f), "audit").Notes, "\n")
	if !strings.Contains(notes, "no 32-bit process runs") {
		t.Errorf("audit notes as root: %q", notes)
	}
}

// TestBacklogNoteWithoutDaemon: tracer never takes the audit PID; where
// no daemon holds it, tracer raises the backlog while it runs.
func TestBacklogNoteWithoutDaemon(t *testing.T) {
	f := loadFacts(t, "rhel86.json")
	st := *f.Audit.Status
	st.PID, st.BacklogLimit = 0, 64
	f.Audit.Status = &st
	notes := strings.Join(VerdictFor(Verdicts(f), "audit").Notes, "\n")
	if !strings.Contains(notes, "backlog limit 64: the tracer raises it while it runs and no audit daemon holds the audit PID") || strings.Contains(notes, "while it holds the audit PID") {
		t.Errorf("backlog note without a daemon: %q", notes)
	}
}
