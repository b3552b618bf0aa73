// SPDX-License-Identifier: Apache-2.0

// Command kernels is make test-kernels: it boots each kernel it is given
// under qemu, with an initramfs of busybox, the packages' test binaries
// (static, CGO_ENABLED=0) and the tests' C programs (gcc -static), runs
// the selected tests there as root with TRACER_TEST_GUEST=1, and fails
// when a test fails, a marker is missing from the serial console, or the
// guest hangs. The console of each kernel is kept in OUT/NAME.log.
//
// The runs are lines of $KERNEL_TESTS (or -runs), one test binary each:
//
//	PACKAGE PATTERN [VAR=VALUE ...]
//
// PACKAGE as go test takes it, PATTERN its -test.run, and variables for its
// environment in the guest.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// run is one test binary's run in the guest.
type run struct {
	Name    string // the binary's name in the guest, and its markers'
	Package string // ./tracer/bpfbackend
	Pattern string
	Env     []string
}

// parseRuns reads the runs' lines; blank lines and # comments are skipped.
func parseRuns(s string) ([]run, error) {
	var out []run
	seen := map[string]int{}
	for _, l := range strings.Split(s, "\n") {
		if i := strings.Index(l, "#"); i >= 0 && strings.TrimSpace(l[:i]) == "" {
			continue
		}
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("run %q: want PACKAGE PATTERN [VAR=VALUE ...]", l)
		}
		r := run{Package: f[0], Pattern: f[1]}
		if !strings.HasPrefix(r.Package, "./") {
			return nil, fmt.Errorf("run %q: the package must be a ./path of this module", l)
		}
		for _, e := range f[2:] {
			if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
				return nil, fmt.Errorf("run %q: %q is not VAR=VALUE", l, e)
			}
			r.Env = append(r.Env, e)
		}
		base := path.Base(r.Package)
		seen[base]++
		r.Name = base
		if n := seen[base]; n > 1 {
			r.Name = fmt.Sprintf("%s-%d", base, n)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, errors.New("no test runs given")
	}
	return out, nil
}

// kernel is one kernel to boot: NAME=PATH.
type kernel struct{ Name, Path string }

type kernelFlags []kernel

func (k *kernelFlags) String() string { return fmt.Sprint(*k) }
func (k *kernelFlags) Set(v string) error {
	name, p, ok := strings.Cut(v, "=")
	if !ok || name == "" || p == "" {
		return fmt.Errorf("%q: want NAME=PATH to a vmlinuz", v)
	}
	*k = append(*k, kernel{name, p})
	return nil
}

type options struct {
	kernels     kernelFlags
	runs        string
	prebuild    string
	out         string
	busybox     string
	accel       string
	timeout     time.Duration
	testTimeout time.Duration
	mem         string
	smp         int
	allowSkip   bool
	kvmCheck    bool
}

func main() {
	var o options
	flag.Var(&o.kernels, "kernel", "NAME=PATH of a kernel image to boot (repeat)")
	flag.StringVar(&o.runs, "runs", os.Getenv("KERNEL_TESTS"), "the test runs, one a line: PACKAGE PATTERN [VAR=VALUE ...] (default $KERNEL_TESTS)")
	flag.StringVar(&o.prebuild, "prebuild", "tracer/tracertest/*.c tracer/audit/testdata/*.c tracer/bpfbackend/testdata/*.c", "globs of the C programs the tests compile, built with gcc -static for the guest")
	flag.StringVar(&o.out, "out", "build/kernels", "directory for the binaries, the initramfs and the console logs")
	flag.StringVar(&o.busybox, "busybox", "/bin/busybox", "a static busybox (Debian's busybox-static)")
	flag.StringVar(&o.accel, "accel", "auto", "kvm, tcg, or auto (kvm when /dev/kvm opens)")
	flag.DurationVar(&o.timeout, "timeout", 0, "how long one guest may run (default 4m with kvm, 25m with tcg)")
	flag.DurationVar(&o.testTimeout, "test-timeout", 0, "each test binary's -test.timeout (default 3m with kvm, 20m with tcg)")
	flag.StringVar(&o.mem, "m", "1G", "the guest's memory")
	flag.IntVar(&o.smp, "smp", 2, "the guest's CPUs")
	flag.BoolVar(&o.allowSkip, "allow-skip", false, "a skipped top-level test is no failure")
	flag.BoolVar(&o.kvmCheck, "kvm-check", false, "only say why KVM cannot boot the kernels here (nothing when it can)")
	flag.Parse()
	if err := mainErr(o); err != nil {
		fmt.Fprintln(os.Stderr, "test-kernels:", err)
		os.Exit(1)
	}
}

func mainErr(o options) error {
	if o.kvmCheck {
		fmt.Print(kvmUnusable())
		return nil
	}
	runs, err := parseRuns(o.runs)
	if err != nil {
		return err
	}
	if len(o.kernels) == 0 {
		return errors.New("no -kernel given")
	}
	accel := o.accel
	if accel == "auto" {
		accel = "kvm"
		if why := kvmUnusable(); why != "" {
			accel = "tcg"
			fmt.Printf("test-kernels: %s: TCG instead, which is slower\n", why)
		}
	}
	if o.timeout == 0 {
		o.timeout = map[bool]time.Duration{true: 4 * time.Minute, false: 25 * time.Minute}[accel == "kvm"]
	}
	if o.testTimeout == 0 {
		o.testTimeout = map[bool]time.Duration{true: 3 * time.Minute, false: 20 * time.Minute}[accel == "kvm"]
	}
	// Two runs would rebuild the initramfs and write the logs under each
	// other.
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(o.out, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("another make test-kernels uses %s: %w", o.out, err)
	}
	start := time.Now()
	initrd, err := buildInitramfs(o, runs)
	if err != nil {
		return err
	}
	fmt.Printf("test-kernels: initramfs %s built in %s; booting with %s\n", initrd, since(start), accel)
	var failed []string
	for _, k := range o.kernels {
		if !bootOne(o, k, accel, initrd, runs) {
			failed = append(failed, k.Name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("failed on %s (logs in %s)", strings.Join(failed, ", "), o.out)
	}
	return nil
}

// kvmUnusable says why KVM cannot boot a distribution's kernel here, or "".
func kvmUnusable() string {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return "no usable /dev/kvm"
	}
	f.Close()
	// PVM (a KVM that runs guests under a guest, without hardware
	// virtualization) boots only kernels built as PVM guests: a Debian
	// kernel never prints a line.
	if _, err := os.Stat("/sys/module/kvm_pvm"); err == nil {
		return "/dev/kvm is PVM (kvm_pvm), which boots only PVM guest kernels"
	}
	return ""
}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Second) }

// buildInitramfs builds the test binaries and C programs and writes the
// guest's initramfs; it returns its path.
func buildInitramfs(o options, runs []run) (string, error) {
	binDir := filepath.Join(o.out, "bin")
	preDir := filepath.Join(o.out, "prebuilt")
	for _, d := range []string{binDir, preDir} {
		if err := os.RemoveAll(d); err != nil {
			return "", err
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	pkgs := map[string]bool{}
	args := []string{"test", "-c", "-o", binDir + "/"}
	for _, r := range runs {
		if !pkgs[r.Package] {
			pkgs[r.Package] = true
			args = append(args, r.Package)
		}
	}
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.Command(goCmd, args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	t := newTree()
	for p := range pkgs {
		base := path.Base(p)
		t.add("tests/"+base+".test", 0o755, filepath.Join(binDir, base+".test"))
		// A test reads its testdata relative to its package's directory.
		td := filepath.Join(p, "testdata")
		_ = filepath.WalkDir(td, func(f string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				t.add(path.Join("src", filepath.ToSlash(filepath.Clean(f))), 0o644, f)
			}
			return nil
		})
	}
	for _, g := range strings.Fields(o.prebuild) {
		srcs, err := filepath.Glob(g)
		if err != nil {
			return "", err
		}
		for _, src := range srcs {
			name := strings.TrimSuffix(filepath.Base(src), ".c")
			bin := filepath.Join(preDir, name)
			if out, err := exec.Command("gcc", "-static", "-O2", "-o", bin, src).CombinedOutput(); err != nil {
				return "", fmt.Errorf("gcc -static %s: %w\n%s", src, err, out)
			}
			t.add("prebuilt/"+name, 0o755, bin)
		}
	}
	t.add("bin/busybox", 0o755, o.busybox)
	list, err := exec.Command(o.busybox, "--list").Output()
	if err != nil {
		return "", fmt.Errorf("%s --list: %w", o.busybox, err)
	}
	for _, applet := range strings.Fields(string(list)) {
		if applet != "busybox" {
			t.symlinks["bin/"+applet] = "busybox"
		}
	}
	t.addData("init", 0o755, []byte(initScript(runs, o.testTimeout)))
	out := filepath.Join(o.out, "initramfs.cpio")
	f, err := os.Create(out)
	if err != nil {
		return "", err
	}
	defer f.Close()
	dirs := []string{"proc", "sys", "tmp", "run", "root", "etc"}
	if err := t.write(f, dirs); err != nil {
		return "", fmt.Errorf("writing %s: %w", out, err)
	}
	return out, f.Close()
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// initScript is the guest's /init: mount what the tests need, run each
// binary between START and END markers, say DONE, power off. The markers
// are what the host reads; a missing one is a failure.
func initScript(runs []run, testTimeout time.Duration) string {
	var b strings.Builder
	b.WriteString(`#!/bin/sh
# make test-kernels' guest init (tracer/tracertest/kernels).
export PATH=/bin HOME=/root TMPDIR=/tmp
m() { mount -t "$1" "$1" "$2" || echo "` + marker + `NOTE mount -t $1 $2 failed"; }
m proc /proc
m sysfs /sys
m devtmpfs /dev
m tracefs /sys/kernel/tracing
m debugfs /sys/kernel/debug
m bpf /sys/fs/bpf
m cgroup2 /sys/fs/cgroup
m tmpfs /tmp
m tmpfs /run
# The OOM test makes a memory-limited cgroup.
echo +memory >/sys/fs/cgroup/cgroup.subtree_control || echo "` + marker + `NOTE no memory controller"
echo "` + marker + `KERNEL $(uname -r) cpus $(nproc)"
`)
	for _, r := range runs {
		env := append([]string{tracertest.GuestEnv + "=1", tracertest.PrebuiltEnv + "=/prebuilt"}, r.Env...)
		for i, e := range env {
			k, v, _ := strings.Cut(e, "=")
			env[i] = k + "=" + shellQuote(v)
		}
		fmt.Fprintf(&b, "echo \"%sSTART %s\"\n", marker, r.Name)
		fmt.Fprintf(&b, "mkdir -p /src/%s && cd /src/%s && env %s /tests/%s.test -test.v -test.count=1 -test.timeout=%s -test.run %s 2>&1\n",
			path.Clean(r.Package), path.Clean(r.Package), strings.Join(env, " "), path.Base(r.Package), testTimeout, shellQuote(r.Pattern))
		fmt.Fprintf(&b, "echo \"%sEND %s $?\"\ncd /\n", marker, r.Name)
	}
	b.WriteString(`echo "` + marker + `DONE"
poweroff -f
`)
	return b.String()
}

// bootOne boots kernel k with the initramfs, streams the console's
// markers and test results, keeps all of it in OUT/NAME.log, and says
// whether every run passed.
func bootOne(o options, k kernel, accel, initrd string, runs []run) bool {
	start := time.Now()
	logPath := filepath.Join(o.out, k.Name+".log")
	prefix := "[" + k.Name + "] "
	fail := func(msg string) bool {
		fmt.Printf("test-kernels: %s: FAIL after %s: %s\n", k.Name, since(start), msg)
		return false
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return fail(err.Error())
	}
	defer logf.Close()
	args := []string{"-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
		"-serial", "stdio", "-m", o.mem, "-smp", fmt.Sprint(o.smp),
		"-kernel", k.Path, "-initrd", initrd,
		// quiet: the kernel's notices (audit records without auditd among
		// them) stay off the console the markers are read from.
		"-append", "console=ttyS0 quiet loglevel=3 panic=-1 " + tracertest.GuestCmdline}
	if accel == "kvm" {
		args = append(args, "-enable-kvm", "-cpu", "host")
	} else {
		// One host thread for both vCPUs: with a thread each (MTTCG), the
		// kernel's live code patching (int3, text_poke) as BPF links are
		// released oopsed the 6.12 guest.
		args = append(args, "-accel", "tcg,thread=single", "-cpu", "max")
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", args...)
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fail(err.Error())
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	fmt.Printf("test-kernels: %s: booting %s (%s, -smp %d -m %s), console in %s\n", k.Name, k.Path, accel, o.smp, o.mem, logPath)
	if err := cmd.Start(); err != nil {
		return fail(err.Error())
	}
	var buf bytes.Buffer
	sc := bufio.NewScanner(io.TeeReader(stdout, io.MultiWriter(logf, &buf)))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if l := strings.TrimRight(sc.Text(), "\r"); worthShowing(l) {
			if i := strings.Index(l, marker); i > 0 {
				l = l[i:] // the firmware's terminal codes before the first
			}
			fmt.Println(prefix + l)
		}
	}
	werr := cmd.Wait()
	c, perr := parseConsole(&buf)
	var names []string
	for _, r := range runs {
		names = append(names, r.Name)
	}
	problems := c.problems(names, o.allowSkip)
	if perr != nil {
		problems = append(problems, perr.Error())
	}
	if ctx.Err() != nil {
		problems = append(problems, fmt.Sprintf("the guest ran past %s and was killed (hung?)", o.timeout))
	} else if werr != nil {
		problems = append(problems, fmt.Sprintf("qemu: %v: %s", werr, strings.TrimSpace(stderr.String())))
	}
	var sums []string
	for _, r := range c.Runs {
		sums = append(sums, r.summary())
	}
	for _, n := range c.Notes {
		fmt.Printf("test-kernels: %s: note: %s\n", k.Name, n)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Printf("test-kernels: %s: %s\n", k.Name, p)
		}
		return fail(fmt.Sprintf("guest kernel %s: %s", c.Kernel, strings.Join(sums, "; ")))
	}
	fmt.Printf("test-kernels: %s: PASS in %s: guest kernel %s, %s CPUs: %s\n", k.Name, since(start), c.Kernel, c.CPUs, strings.Join(sums, "; "))
	return true
}

// worthShowing picks the console lines make test-kernels prints as it
// goes: markers, top-level results and failures, panics.
func worthShowing(l string) bool {
	switch {
	case strings.Contains(l, marker):
		return true
	case strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "FAIL"), strings.HasPrefix(l, "ok "), strings.HasPrefix(l, "panic: "):
		return true
	case strings.Contains(l, "--- FAIL"), strings.Contains(l, "Kernel panic"):
		return true
	}
	return false
}
