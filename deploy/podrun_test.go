// SPDX-License-Identifier: Apache-2.0

//go:build linux

package deploy

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The test below runs each DaemonSet's containers the way a kubelet
// would, without a cluster: the tracer built from this repository, as
// root, in a mount namespace of its own whose root filesystem is
// read-only and where only the pod's volumes are writable, with only the
// capabilities the manifest adds (the bounding set, as container runtimes
// set it) and no_new_privs, in the node's PID and network namespaces.
// Seccomp profiles are not applied, and the kube-rbac-proxy sidecar is not
// run: its upstream, the tracer's loopback metrics address, is checked
// directly, with the client certificate kube-rbac-proxy would present.
// cert-manager's Secrets are stood in for by a test CA that issues each
// Certificate of the manifests as its spec says.

// sandboxEnv carries a sandboxConfig to the re-executed test binary.
const sandboxEnv = "TRACER_TEST_POD_SANDBOX"

func TestMain(m *testing.M) {
	if cfg := os.Getenv(sandboxEnv); cfg != "" {
		runSandbox(cfg) // does not return
	}
	os.Exit(m.Run())
}

// sandboxConfig is one container: its root, volumes, capabilities, argv.
type sandboxConfig struct {
	Root       string         // an empty directory, where a tmpfs becomes the container's /
	Dirs       []string       // directories of the image that are volume mount points
	Mounts     []sandboxMount // the pod's volumes, mounted after / is made read-only
	Caps       []string       // capabilities added, in setpriv's names
	NoNewPrivs bool
	Argv       []string
}

type sandboxMount struct {
	Source, Target string
	ReadOnly       bool
}

// imageDirs of the node stand in for the image's own (debian-slim has
// the same layout); everything else of the node stays out.
var imageDirs = []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "var", "proc", "sys", "dev"}

// runSandbox sets the container up and execs setpriv, which execs the
// container's command: the pid stays the same, so the test's signals
// reach the tracer. The mount namespace, and every mount in it, goes away
// with the process.
func runSandbox(js string) {
	fail := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "sandbox: "+format+"\n", a...)
		os.Exit(127)
	}
	var c sandboxConfig
	if err := json.Unmarshal([]byte(js), &c); err != nil {
		fail("config: %v", err)
	}
	// Mount namespaces are per thread until exec: stay on this one.
	runtime.LockOSThread()
	if err := syscall.Unshare(syscall.CLONE_NEWNS); err != nil {
		fail("unshare: %v", err)
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		fail("making / private: %v", err)
	}
	if err := syscall.Mount("tmpfs", c.Root, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755,size=4m"); err != nil {
		fail("root tmpfs: %v", err)
	}
	for _, name := range imageDirs {
		host, dst := "/"+name, filepath.Join(c.Root, name)
		fi, err := os.Lstat(host)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 { // merged /usr: /bin -> usr/bin
			target, _ := os.Readlink(host)
			if err := os.Symlink(target, dst); err != nil {
				fail("%v", err)
			}
			continue
		}
		if err := os.Mkdir(dst, 0o755); err != nil {
			fail("%v", err)
		}
		if err := syscall.Mount(host, dst, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			fail("binding %s: %v", host, err)
		}
	}
	for _, d := range c.Dirs {
		if err := os.MkdirAll(filepath.Join(c.Root, d), 0o755); err != nil {
			fail("%v", err)
		}
	}
	// readOnlyRootFilesystem: all of it, every submount included.
	if err := mountSetattrReadOnly(c.Root); err != nil {
		fail("making the root read-only: %v", err)
	}
	for _, m := range c.Mounts {
		dst := filepath.Join(c.Root, m.Target)
		if _, err := os.Stat(dst); err != nil {
			fail("mount point %s: %v", m.Target, err)
		}
		if err := syscall.Mount(m.Source, dst, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			fail("mounting %s at %s: %v", m.Source, m.Target, err)
		}
		if m.ReadOnly {
			if err := syscall.Mount("", dst, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
				fail("making %s read-only: %v", m.Target, err)
			}
		}
	}
	if err := syscall.Chroot(c.Root); err != nil {
		fail("chroot: %v", err)
	}
	if err := syscall.Chdir("/"); err != nil {
		fail("chdir: %v", err)
	}
	// Root in a container: the bounding set is what the manifest adds,
	// and exec gives uid 0 exactly the bounding set.
	bounding := "-all"
	for _, cp := range c.Caps {
		bounding += ",+" + cp
	}
	argv := []string{"/usr/bin/setpriv", "--bounding-set=" + bounding, "--inh-caps=-all"}
	if c.NoNewPrivs {
		argv = append(argv, "--no-new-privs")
	}
	argv = append(append(argv, "--"), c.Argv...)
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"}
	err := syscall.Exec(argv[0], argv, env)
	fail("exec %v: %v", argv, err)
}

// mountSetattrReadOnly is mount_setattr(2) with MOUNT_ATTR_RDONLY and
// AT_RECURSIVE (Linux 5.12), which the syscall package does not wrap.
func mountSetattrReadOnly(path string) error {
	const (
		sysMountSetattr = 442 // the same number on every architecture
		atFdcwd         = -100
		atRecursive     = 0x8000
		mountAttrRdonly = 0x1
	)
	attr := struct{ set, clr, propagation, usernsFd uint64 }{set: mountAttrRdonly}
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return err
	}
	fd := atFdcwd
	_, _, errno := syscall.Syscall6(sysMountSetattr, uintptr(fd), uintptr(unsafe.Pointer(p)), atRecursive,
		uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// pod is one DaemonSet's pod on this node: host directories for its
// volumes, which outlive a container (emptyDir: the pod; hostPath: here,
// directories of the test standing in for the node's).
type pod struct {
	spec  corev1.PodSpec
	bin   string            // directory holding the tracer binary
	dirs  map[string]string // volume name -> host directory
	roots string            // where container roots are made
	pki   *testPKI          // what cert-manager would have issued
}

func newPod(t *testing.T, spec corev1.PodSpec, bin string, hostPaths map[string]string) *pod {
	t.Helper()
	p := &pod{spec: spec, bin: bin, dirs: map[string]string{}, roots: t.TempDir(), pki: newTestPKI(t)}
	for _, v := range spec.Volumes {
		switch {
		case v.Secret != nil || v.ConfigMap != nil || (v.Projected != nil && v.Projected.Sources[0].ServiceAccountToken == nil):
			p.dirs[v.Name] = p.pki.volume(t, v)
		case v.EmptyDir != nil:
			p.dirs[v.Name] = t.TempDir()
		case v.HostPath != nil:
			d, ok := hostPaths[v.HostPath.Path]
			if !ok {
				d = v.HostPath.Path // read-only system paths: the node's own
			}
			p.dirs[v.Name] = d
		}
	}
	return p
}

// command builds the sandboxed command for container c with argv; the
// image's entrypoint is the tracer.
func (p *pod) command(t *testing.T, c corev1.Container, argv []string) *exec.Cmd {
	t.Helper()
	root, err := os.MkdirTemp(p.roots, c.Name+"-")
	if err != nil {
		t.Fatal(err)
	}
	cfg := sandboxConfig{Root: root, Dirs: []string{"tracer-bin"}, Argv: argv}
	cfg.Mounts = append(cfg.Mounts, sandboxMount{Source: p.bin, Target: "/tracer-bin", ReadOnly: true})
	for _, vm := range c.VolumeMounts {
		src, ok := p.dirs[vm.Name]
		if !ok {
			t.Fatalf("%s: volume %s is not one this test can provide", c.Name, vm.Name)
		}
		top := strings.Split(strings.TrimPrefix(vm.MountPath, "/"), "/")[0]
		if !slices.Contains(imageDirs, top) {
			cfg.Dirs = append(cfg.Dirs, vm.MountPath)
		}
		cfg.Mounts = append(cfg.Mounts, sandboxMount{Source: src, Target: vm.MountPath, ReadOnly: vm.ReadOnly})
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil {
		t.Fatalf("%s: the test expects a read-only root and explicit capabilities", c.Name)
	}
	for _, cp := range sc.Capabilities.Add {
		cfg.Caps = append(cfg.Caps, strings.ToLower(string(cp)))
	}
	cfg.NoNewPrivs = sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), sandboxEnv+"="+string(js))
	return cmd
}

// run runs container c to its end, as an init container runs.
func (p *pod) run(t *testing.T, c corev1.Container) string {
	t.Helper()
	cmd := p.command(t, c, append([]string{"/tracer-bin/tracer"}, c.Args...))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s (%v): %v\n%s", c.Name, c.Args, err, out)
	}
	return string(out)
}

// running is a long-running container: its JSON lines and its stderr.
type running struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	events []map[string]any
	stderr strings.Builder
	done   chan error
}

func (p *pod) start(t *testing.T, c corev1.Container, args []string) *running {
	t.Helper()
	r := &running{cmd: p.command(t, c, append([]string{"/tracer-bin/tracer"}, args...)), done: make(chan error, 1)}
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e map[string]any
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				r.mu.Lock()
				r.events = append(r.events, e)
				r.mu.Unlock()
			}
		}
	}()
	go func() {
		defer wg.Done()
		b := bufio.NewReader(stderr)
		for {
			l, err := b.ReadString('\n')
			r.mu.Lock()
			r.stderr.WriteString(l)
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		r.done <- r.cmd.Wait()
	}()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

func (r *running) errText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.String()
}

// count is how many events match every field of want.
func (r *running) count(want map[string]string) int { return len(r.matching(want)) }

func (r *running) matching(want map[string]string) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, e := range r.events {
		ok := true
		for k, v := range want {
			ok = ok && fmt.Sprint(e[k]) == v
		}
		if ok {
			out = append(out, e)
		}
	}
	return out
}

func (r *running) waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		select {
		case err := <-r.done:
			r.done <- err
			t.Fatalf("container ended (%v) before %s:\n%s", err, what, r.errText())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v:\n%s", what, timeout, r.errText())
		}
	}
}

// stop sends SIGTERM, as the kubelet does, and waits.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-r.done:
		return err
	case <-time.After(30 * time.Second): // terminationGracePeriodSeconds
		_ = r.cmd.Process.Kill()
		return fmt.Errorf("still running 30s after SIGTERM:\n%s", r.errText())
	}
}

func (r *running) kill() {
	_ = r.cmd.Process.Kill()
	err := <-r.done
	r.done <- err
}

// nodeState is what a tracer may change on the node and must give back.
func nodeState(t *testing.T) string {
	t.Helper()
	rules, err := exec.Command("auditctl", "-l").CombinedOutput()
	if err != nil {
		t.Fatalf("auditctl -l: %v: %s", err, rules)
	}
	status, err := exec.Command("auditctl", "-s").CombinedOutput()
	if err != nil {
		t.Fatalf("auditctl -s: %v: %s", err, status)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rules:\n%s", rules)
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) == 2 && slices.Contains([]string{"enabled", "pid", "backlog_limit", "backlog_wait_time", "failure"}, f[0]) {
			fmt.Fprintf(&b, "%s\n", l)
		}
	}
	var pinned []string
	_ = filepath.WalkDir("/sys/fs/bpf", func(p string, _ os.DirEntry, err error) error {
		if err == nil && p != "/sys/fs/bpf" {
			pinned = append(pinned, p)
		}
		return nil
	})
	fmt.Fprintf(&b, "bpffs: %v\n", pinned)
	return b.String()
}

// sameNode waits until the node is as before: the kernel forgets a dead
// audit PID only at its next record, so records are made meanwhile.
func sameNode(t *testing.T, before string) {
	t.Helper()
	var now string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if now = quietNode(t); now == before {
			return
		}
		_ = exec.Command("true").Run()
	}
	t.Errorf("the node is not as it was:\nbefore\n%s\nafter\n%s", before, now)
}

// instanceKey matches the rule key of a running tracer, tracer-PID-START.
var instanceKey = regexp.MustCompile(`key=tracer-(\d+)-`)

// quietNode is nodeState once no other tracer is running: the node is
// shared, and a tracer outside the test lock (someone's watch, a demo)
// changes the same settings for a while. A rule of a tracer whose process
// is gone is a leftover, not a reason to wait.
func quietNode(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		st := nodeState(t)
		var live []string
		for _, m := range instanceKey.FindAllStringSubmatch(st, -1) {
			if _, err := os.Stat("/proc/" + m[1]); err == nil {
				live = append(live, m[1])
			}
		}
		if len(live) == 0 {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("tracers %v outside this test keep audit rules loaded; the node's state cannot be compared:\n%s", live, st)
		}
		time.Sleep(time.Second)
	}
}

func auditctl(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("auditctl", args...).CombinedOutput(); err != nil {
		t.Errorf("auditctl %v: %v: %s", args, err, out)
	}
}

// lockAudit takes the machine-wide lock of the tests that touch audit
// state (tracer/tracertest.LockAudit, which this module cannot import).
func lockAudit(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile("/run/tracer-test-audit.lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	})
}

// buildTracer builds ./cmd/tracer as the Dockerfile does (static).
func buildTracer(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "tracer"), "./cmd/tracer")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/tracer: %v\n%s", err, out)
	}
	return dir
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

func httpGet(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	code, body, err := tryGet(c, url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return code, body
}

func tryGet(c *http.Client, url string) (int, string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// testPKI stands in for cert-manager: a CA of its own, and each
// Certificate of the manifests issued by it as its spec says, in a Secret
// of tls.crt, tls.key and ca.crt.
type testPKI struct {
	secrets     map[string]map[string][]byte
	configMaps  map[string]map[string]string
	roots       *x509.CertPool
	proxyClient *tls.Certificate // the client certificate the web config allows
	other       *tls.Certificate // a client certificate of the same CA, another SAN
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	m := load(t)
	p := &testPKI{secrets: map[string]map[string][]byte{}, configMaps: map[string]map[string]string{}, roots: x509.NewCertPool()}
	for _, cm := range m.configMaps {
		p.configMaps[cm.Name] = cm.Data
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test tracer-ca"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p.roots.AddCert(ca)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	issue := func(cn string, dns, ips, uris, usages []string) (certPEM, keyPEM []byte, pair tls.Certificate) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
			KeyUsage: x509.KeyUsageDigitalSignature, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		for _, ip := range ips {
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
		}
		for _, u := range uris {
			pu, err := url.Parse(u)
			if err != nil {
				t.Fatal(err)
			}
			tmpl.URIs = append(tmpl.URIs, pu)
		}
		for _, u := range usages {
			switch u {
			case "server auth":
				tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
			case "client auth":
				tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
			}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
		pair, err = tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return certPEM, keyPEM, pair
	}
	for _, c := range m.certificates {
		if c.Spec.IsCA {
			continue
		}
		crt, key, pair := issue(c.Spec.CommonName, c.Spec.DNSNames, c.Spec.IPAddresses, c.Spec.URIs, c.Spec.Usages)
		p.secrets[c.Spec.SecretName] = map[string][]byte{"tls.crt": crt, "tls.key": key, "ca.crt": caPEM}
		if slices.Contains(c.Spec.Usages, "client auth") {
			p.proxyClient = &pair
		}
	}
	if p.proxyClient == nil {
		t.Fatal("no client Certificate in the manifests")
	}
	_, _, other := issue("someone", nil, nil, []string{"urn:someone:else"}, []string{"client auth"})
	p.other = &other
	return p
}

// volume writes what a Secret, ConfigMap or projected volume holds into a
// directory of its own.
func (p *testPKI) volume(t *testing.T, v corev1.Volume) string {
	t.Helper()
	dir := t.TempDir()
	put := func(data map[string][]byte, items []corev1.KeyToPath, what string) {
		if len(items) == 0 {
			for k := range data {
				items = append(items, corev1.KeyToPath{Key: k, Path: k})
			}
		}
		for _, it := range items {
			b, ok := data[it.Key]
			if !ok {
				t.Fatalf("volume %s: %s has no key %s", v.Name, what, it.Key)
			}
			if err := os.WriteFile(filepath.Join(dir, it.Path), b, 0o400); err != nil {
				t.Fatal(err)
			}
		}
	}
	cm := func(name string) map[string][]byte {
		out := map[string][]byte{}
		for k, s := range p.configMaps[name] {
			out[k] = []byte(s)
		}
		return out
	}
	switch {
	case v.Secret != nil:
		put(p.secrets[v.Secret.SecretName], v.Secret.Items, "Secret "+v.Secret.SecretName)
	case v.ConfigMap != nil:
		put(cm(v.ConfigMap.Name), v.ConfigMap.Items, "ConfigMap "+v.ConfigMap.Name)
	case v.Projected != nil:
		for _, src := range v.Projected.Sources {
			switch {
			case src.Secret != nil:
				put(p.secrets[src.Secret.Name], src.Secret.Items, "Secret "+src.Secret.Name)
			case src.ConfigMap != nil:
				put(cm(src.ConfigMap.Name), src.ConfigMap.Items, "ConfigMap "+src.ConfigMap.Name)
			default:
				t.Fatalf("volume %s: a projection this test cannot provide", v.Name)
			}
		}
	}
	return dir
}

// client is an HTTPS client that trusts the test CA and presents cert.
func (p *testPKI) client(t *testing.T, cert *tls.Certificate) *http.Client {
	t.Helper()
	cfg := &tls.Config{RootCAs: p.roots}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

// workloadComm names the helper shell whose 5 execs of /bin/true the
// tracer must see exactly, among all of the node's.
const workloadComm = "podrunwl"

// runWorkload runs the helper and returns its pid, the parent of the
// execs to count.
func runWorkload(t *testing.T) int {
	t.Helper()
	sh := filepath.Join(t.TempDir(), workloadComm)
	data, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sh, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sh, "-c", "for i in 1 2 3 4 5; do /bin/true; done")
	if err := cmd.Run(); err != nil {
		t.Fatalf("workload: %v", err)
	}
	return cmd.Process.Pid
}

// watchArgs are the container's args with a free loopback port in place
// of the manifest's (tests and tracers share this node) and --duration so
// it ends even if the test does not stop it.
func watchArgs(t *testing.T, c corev1.Container) ([]string, string) {
	t.Helper()
	port := freePort(t)
	var args []string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--metrics-addr="); ok {
			host, _, err := net.SplitHostPort(v)
			if err != nil {
				t.Fatalf("--metrics-addr %q: %v", v, err)
			}
			a = "--metrics-addr=" + net.JoinHostPort(host, port)
			port = net.JoinHostPort(host, port)
		}
		args = append(args, a)
	}
	return append(args, "--duration=120s"), port
}

// watchWorkload starts the pod's tracer container, checks that it serves
// its metrics and sees the workload's execs exactly, and stops it.
func watchWorkload(t *testing.T, p *pod, c corev1.Container) {
	t.Helper()
	args, addr := watchArgs(t, c)
	r := p.start(t, c, args)
	r.waitFor(t, "watching line", 60*time.Second, func() bool { return strings.Contains(r.errText(), "tracer: watching") })
	// As kube-rbac-proxy: its client certificate, the tracer verified.
	proxy := p.pki.client(t, p.pki.proxyClient)
	if code, body := httpGet(t, proxy, "https://"+addr+"/healthz"); code != 200 {
		t.Errorf("/healthz once watching: %d %q", code, body)
	}
	if code, body := httpGet(t, proxy, "https://"+addr+"/metrics"); code != 200 || !strings.Contains(body, "tracer_build_info") {
		t.Errorf("/metrics: %d", code)
	}
	// Any other user of the node: plain HTTP, TLS without a client
	// certificate, or with one of the same CA but not kube-rbac-proxy's.
	if code, body, err := tryGet(p.pki.client(t, nil), "http://"+addr+"/metrics"); err == nil && code == 200 {
		t.Errorf("plain HTTP /metrics: %d %.80q, want refused", code, body)
	}
	for what, cert := range map[string]*tls.Certificate{"no client certificate": nil, "another client certificate of the CA": p.pki.other} {
		if code, body, err := tryGet(p.pki.client(t, cert), "https://"+addr+"/metrics"); err == nil {
			t.Errorf("/metrics with %s: %d %.80q, want the handshake refused", what, code, body)
		}
	}
	// By parent pid, not by comm: the count is the subject here.
	want := map[string]string{"type": "exec", "filename": "/bin/true", "ppid": fmt.Sprint(runWorkload(t))}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("execs of /bin/true seen: %v", r.matching(map[string]string{"type": "exec", "filename": "/bin/true"}))
		}
	})
	r.waitFor(t, "5 execs of the workload", 30*time.Second, func() bool { return r.count(want) >= 5 })
	time.Sleep(time.Second) // room for an excess event to show
	if wrong := len(r.matching(want)) - r.count(map[string]string{"type": "exec", "filename": "/bin/true", "ppid": want["ppid"], "comm": workloadComm}); wrong > 0 {
		t.Logf("note: %d of the execs carry another comm than %s, the caller's before the exec", wrong, workloadComm)
	}
	if err := r.stop(t); err != nil {
		t.Errorf("after SIGTERM: %v\n%s", err, r.errText())
	}
	if n := r.count(want); n != 5 {
		t.Errorf("the tracer saw %d execs of /bin/true by %s (pid %s), want exactly 5", n, workloadComm, want["ppid"])
	}
	t.Logf("%s", strings.TrimSpace(r.errText()))
}

func loadDaemonSet(t *testing.T, file string) appsv1.DaemonSet {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(data, &ds); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return ds
}

func containerNamed(t *testing.T, cs []corev1.Container, name string) corev1.Container {
	t.Helper()
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %s", name)
	return corev1.Container{}
}

// TestPodsRunAsManifested runs the DaemonSets' tracer containers as their
// manifests say: the init container's cleanup first, then watch, which
// must start on a read-only root, see a known workload exactly and leave
// the node as it found it; after a kill -9 the next pod's cleanup must
// restore what the killed one changed, from the shared /run/tracer.
// Then the bench pod runs a short bench as docs/fleet.md does.
func TestPodsRunAsManifested(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs the tracer's containers in mount namespaces and loads audit rules and BPF programs")
	}
	for _, tool := range []string{"setpriv", "auditctl"} {
		if _, err := exec.LookPath(tool); err != nil {
			// make test installs them (make deps): a failure there only.
			if os.Getenv("TRACER_DEPS_INSTALLED") == "1" {
				t.Fatalf("%s is not installed (util-linux, auditd): %v", tool, err)
			}
			t.Skipf("%s is not installed (util-linux, auditd): %v", tool, err)
		}
	}
	lockAudit(t)
	bin := buildTracer(t)
	// The node's /run/tracer, as the hostPath volume gives it to every pod.
	nodeRun := t.TempDir()
	// The runtimes' socket directories: a node without Kubernetes has
	// neither, and a runtime makes an untyped hostPath's directory as it
	// mounts it; empty ones here (the watch finds no socket and goes on).
	hostPaths := map[string]string{"/run/tracer": nodeRun, "/run/containerd": t.TempDir(), "/run/crio": t.TempDir()}

	t.Run("ebpf", func(t *testing.T) {
		ds := loadDaemonSet(t, "kubernetes/daemonset-ebpf.yaml")
		before := quietNode(t)
		p := newPod(t, ds.Spec.Template.Spec, bin, hostPaths)
		watchWorkload(t, p, containerNamed(t, p.spec.Containers, "tracer"))
		sameNode(t, before)
	})

	t.Run("audit", func(t *testing.T) {
		ds := loadDaemonSet(t, "kubernetes/daemonset-audit.yaml")
		spec := ds.Spec.Template.Spec
		if len(spec.InitContainers) != 1 {
			t.Fatalf("want one init container, have %d", len(spec.InitContainers))
		}
		// Audit off, as on nodes without auditd: the tracer turns it on for
		// its session, which it must record first, in /run/tracer, and
		// undo, also after a kill -9.
		if strings.Contains(quietNode(t), "\nenabled 1\n") {
			auditctl(t, "-e", "0")
			t.Cleanup(func() { auditctl(t, "-e", "1") })
		}
		// The first pod's init container: it also removes what tracers
		// killed before this test left, so the baseline comes after it.
		p := newPod(t, spec, bin, hostPaths)
		p.run(t, spec.InitContainers[0])
		before := quietNode(t)
		c := containerNamed(t, spec.Containers, "tracer")
		watchWorkload(t, p, c)
		sameNode(t, before)

		// A pod killed with SIGKILL (OOM, node pressure) leaves its rules
		// and settings; the next pod's init container puts them back.
		p = newPod(t, spec, bin, hostPaths)
		p.run(t, spec.InitContainers[0])
		args, _ := watchArgs(t, c)
		r := p.start(t, c, args)
		r.waitFor(t, "watching line", 60*time.Second, func() bool { return strings.Contains(r.errText(), "tracer: watching") })
		r.kill()
		left, _ := filepath.Glob(filepath.Join(nodeRun, "*"))
		t.Logf("left by the killed pod in /run/tracer: %v", left)
		p = newPod(t, spec, bin, hostPaths)
		out := p.run(t, spec.InitContainers[0])
		t.Logf("cleanup after the kill:\n%s", strings.TrimSpace(out))
		sameNode(t, before)
		if left, _ := filepath.Glob(filepath.Join(nodeRun, "*")); len(left) != 0 {
			t.Errorf("/run/tracer after cleanup: %v", left)
		}
	})

	t.Run("bench", func(t *testing.T) {
		ds := loadDaemonSet(t, "bench/daemonset-bench.yaml")
		before := quietNode(t)
		p := newPod(t, ds.Spec.Template.Spec, bin, hostPaths)
		c := containerNamed(t, p.spec.Containers, "bench")
		// What docs/fleet.md runs with kubectl exec, shortened.
		cmd := p.command(t, c, []string{"/tracer-bin/tracer", "bench", "--workload", "cis-shell", "--modes", "none,audit,ebpf",
			"--rounds", "1", "--count", "20", "--out", "/results/result.json"})
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tracer bench in the bench pod: %v\n%s", err, out)
		}
		var results string
		for _, v := range c.VolumeMounts {
			if v.MountPath == "/results" {
				results = p.dirs[v.Name]
			}
		}
		b, err := os.ReadFile(filepath.Join(results, "result.json"))
		if err != nil || !json.Valid(b) {
			t.Errorf("no result file in the results volume (%v):\n%s", err, out)
		}
		sameNode(t, before)
	})
}
