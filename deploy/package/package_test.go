// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The packages as make package builds them, checked with the
// distributions' own tools (rpm, rpmlint, dpkg-deb); as root, the deb is
// installed, its unit run as systemd would run it, and removed again on
// this node (install_test.go).

var built struct {
	once     sync.Once
	dir      string // the test's work directory: build/ and dist/
	rpm, deb string
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// packages runs make package once for the test binary, into a directory
// of its own, and returns the two packages.
func packages(t *testing.T) (rpm, deb string) {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "tracer-package-test-")
		if built.err != nil {
			return
		}
		build, dist := filepath.Join(built.dir, "build"), filepath.Join(built.dir, "dist")
		cmd := exec.Command("make", "--no-print-directory", "package", "PKG_BUILD="+build, "DIST="+dist)
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("make package: %v\n%s", err, out)
			return
		}
		for _, p := range []struct {
			glob string
			dst  *string
		}{{"tracer-*.x86_64.rpm", &built.rpm}, {"tracer_*_amd64.deb", &built.deb}} {
			m, _ := filepath.Glob(filepath.Join(dist, p.glob))
			if len(m) != 1 {
				built.err = fmt.Errorf("make package wrote %v as %s, want one file", m, p.glob)
				return
			}
			*p.dst = m[0]
		}
		if ents, _ := os.ReadDir(dist); len(ents) != 2 {
			built.err = fmt.Errorf("make package wrote %d files to DIST, want the two packages", len(ents))
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.rpm, built.deb
}

// need ends the test when a tool make deps installs is missing.
func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			// make test installs them (make deps) and says so
			// (TRACER_DEPS_INSTALLED): a failure there, a skip elsewhere.
			if os.Getenv("TRACER_DEPS_INSTALLED") == "1" {
				t.Fatalf("%s is not installed: make deps installs it (Debian package list PACKAGE_TEST_PACKAGES in the Makefile)", tool)
			}
			t.Skipf("%s is not installed: make deps installs it (Debian package list PACKAGE_TEST_PACKAGES in the Makefile)", tool)
		}
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return string(out)
}

// wantFile is a file the packages hold.
type wantFile struct {
	mode    string // ls -l's
	doc     bool   // rpm: %doc
	conf    bool   // config, noreplace
	license bool   // rpm: %license
}

// wantFiles is what each package must hold, exactly (directories the
// distribution owns aside): the files of this repository and the man
// pages make package wrote.
func wantFiles(t *testing.T, format string) map[string]wantFile {
	t.Helper()
	confDir := map[string]string{"rpm": "/etc/sysconfig/tracer", "deb": "/etc/default/tracer"}[format]
	w := map[string]wantFile{
		"/usr/share/bash-completion/completions/tracer":    {mode: "-rw-r--r--"},
		zshCompletion[format]:                              {mode: "-rw-r--r--"},
		"/usr/share/fish/vendor_completions.d/tracer.fish": {mode: "-rw-r--r--"},
		"/usr/bin/tracer":                                  {mode: "-rwxr-xr-x"},
		"/usr/lib/systemd/system/tracer.service":           {mode: "-rw-r--r--"},
		"/usr/lib/tmpfiles.d/tracer.conf":                  {mode: "-rw-r--r--"},
		confDir:                                            {mode: "-rw-------", conf: true}, // may hold OTLP headers
		"/etc/logrotate.d/tracer":                          {mode: "-rw-r--r--", conf: true},
		"/etc/audit/plugins.d/tracer.conf":                 {mode: "-rw-r-----", conf: true}, // active = no
		"/etc/tracer/auditd-plugin.flags":                  {mode: "-rw-------", conf: true}, // read by root
		"/etc/tracer":                                      {mode: "drwx------"},
		"/var/log/tracer":                                  {mode: "drwxr-xr-x"},
		"/usr/share/doc/tracer":                            {mode: "drwxr-xr-x"},
		"/usr/share/doc/tracer/docs":                       {mode: "drwxr-xr-x"},
		"/usr/share/doc/tracer/README.md":                  {mode: "-rw-r--r--", doc: true},
	}
	switch format {
	case "rpm":
		w["/usr/share/licenses/tracer"] = wantFile{mode: "drwxr-xr-x"}
		w["/usr/share/licenses/tracer/LICENSE"] = wantFile{mode: "-rw-r--r--", license: true}
	case "deb":
		w["/usr/share/doc/tracer/copyright"] = wantFile{mode: "-rw-r--r--", doc: true}
	}
	docs, _ := filepath.Glob(filepath.Join(built.dir, "build", "doc", "docs", "*.md"))
	if len(docs) == 0 {
		t.Fatal("make package copied no docs/*.md")
	}
	for _, d := range docs {
		w["/usr/share/doc/tracer/docs/"+filepath.Base(d)] = wantFile{mode: "-rw-r--r--", doc: true}
	}
	man, _ := filepath.Glob(filepath.Join(built.dir, "build", "man", "*.8.gz"))
	if !slices.ContainsFunc(man, func(p string) bool { return strings.HasSuffix(p, "/tracer-watch.8.gz") }) {
		t.Fatalf("make package wrote the man pages %v: no tracer-watch.8.gz", man)
	}
	for _, m := range man {
		w["/usr/share/man/man8/"+filepath.Base(m)] = wantFile{mode: "-rw-r--r--", doc: true}
	}
	return w
}

// zshCompletion is where each distribution's zsh looks for a package's
// completion functions.
var zshCompletion = map[string]string{
	"rpm": "/usr/share/zsh/site-functions/_tracer",
	"deb": "/usr/share/zsh/vendor-completions/_tracer",
}

// wantVersion is the package version for the binary in the packages:
// what it reports, made rpm- and deb-safe.
func wantVersion(t *testing.T, bin string) string {
	t.Helper()
	v, err := binaryVersion(bin)
	if err != nil {
		t.Fatal(err)
	}
	pv, err := packageVersion(v)
	if err != nil {
		t.Fatal(err)
	}
	// The binary's version is the Makefile's, git describe's: its commit
	// is this repository's (HEAD itself may have moved on since: other
	// work is committed while the tests run).
	commit := v
	if m := regexp.MustCompile(`-g([0-9a-f]+)(-dirty)?$`).FindStringSubmatch(v); m != nil {
		commit = m[1]
	} else if c, ok := strings.CutSuffix(v, "-dirty"); ok {
		commit = c
	}
	if err := exec.Command("git", "-C", "../..", "rev-parse", "--verify", "--quiet", commit+"^{commit}").Run(); err != nil {
		t.Errorf("the packaged binary reports version %q; %s is no commit or tag of this repository (git describe: %s)",
			v, commit, strings.TrimSpace(run(t, "git", "-C", "../..", "describe", "--tags", "--always", "--dirty")))
	}
	return pv
}

// extractDeb unpacks the deb's files and control files.
func extractDeb(t *testing.T, deb string) (root, control string) {
	t.Helper()
	dir := t.TempDir()
	root, control = filepath.Join(dir, "root"), filepath.Join(dir, "DEBIAN")
	run(t, "dpkg-deb", "-x", deb, root)
	run(t, "dpkg-deb", "-e", deb, control)
	return root, control
}

func TestRPM(t *testing.T) {
	need(t, "rpm", "dpkg-deb")
	rpm, deb := packages(t)
	debRoot, _ := extractDeb(t, deb)
	version := wantVersion(t, filepath.Join(debRoot, "usr/bin/tracer"))
	if base := filepath.Base(rpm); base != "tracer-"+version+".x86_64.rpm" {
		t.Errorf("rpm file %s, want tracer-%s.x86_64.rpm", base, version)
	}
	info := run(t, "rpm", "-qp", "--qf", "%{NAME}|%{VERSION}|%{RELEASE}|%{ARCH}|%{OS}|%{SUMMARY}|%{URL}\n", rpm)
	if want := "tracer|" + version + "|1|x86_64|linux|"; !strings.HasPrefix(info, want) {
		t.Errorf("rpm -qp NAME|VERSION|RELEASE|ARCH|OS: %q, want %q...", info, want)
	}
	qpi := run(t, "rpm", "-qpi", rpm)
	t.Logf("rpm -qpi:\n%s", qpi)
	for _, f := range []string{"Summary     : Who forks", "URL         : https://github.com/tracer-dev/tracer", "Description :", "License     : Apache-2.0 AND (GPL-2.0-only OR MIT)\n"} {
		if !strings.Contains(qpi, f) {
			t.Errorf("rpm -qpi lacks %q", f)
		}
	}

	// Every file, its mode, owner and flags (c: config, n: noreplace, d: doc).
	want := wantFiles(t, "rpm")
	got := map[string]bool{}
	list := run(t, "rpm", "-qp", "--qf", "[%{FILEMODES:perms}|%{FILEUSERNAME}:%{FILEGROUPNAME}|%{FILEFLAGS:fflags}|%{FILENAMES}\n]", rpm)
	for _, l := range strings.Split(strings.TrimSpace(list), "\n") {
		f := strings.Split(l, "|")
		if len(f) != 4 {
			t.Fatalf("rpm -qp line %q", l)
		}
		mode, owner, flags, path := f[0], f[1], f[2], f[3]
		w, ok := want[path]
		if !ok {
			t.Errorf("rpm holds %s, which it should not", path)
			continue
		}
		got[path] = true
		wantFlags := ""
		if w.conf {
			wantFlags = "cn"
		}
		if w.doc {
			wantFlags = "d"
		}
		if w.license {
			wantFlags = "l"
		}
		if mode != w.mode || owner != "root:root" || flags != wantFlags {
			t.Errorf("rpm: %s %s %q %s, want %s root:root %q", mode, owner, flags, path, w.mode, wantFlags)
		}
	}
	for p := range want {
		if !got[p] {
			t.Errorf("rpm lacks %s", p)
		}
	}

	// The same bytes as the deb's: one binary, one unit, one config.
	algo := strings.TrimSpace(run(t, "rpm", "-qp", "--qf", "%{FILEDIGESTALGO}", rpm))
	digests := run(t, "rpm", "-qp", "--qf", "[%{FILEDIGESTS}|%{FILENAMES}\n]", rpm)
	same := map[string]string{
		"/usr/bin/tracer": "usr/bin/tracer", "/usr/lib/systemd/system/tracer.service": "usr/lib/systemd/system/tracer.service",
		"/etc/sysconfig/tracer": "etc/default/tracer", "/etc/logrotate.d/tracer": "etc/logrotate.d/tracer",
		"/usr/lib/tmpfiles.d/tracer.conf": "usr/lib/tmpfiles.d/tracer.conf",
	}
	for _, l := range strings.Split(strings.TrimSpace(digests), "\n") {
		f := strings.Split(l, "|")
		debPath, ok := same[f[1]]
		if !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(debRoot, debPath))
		if err != nil {
			t.Fatal(err)
		}
		var sum string
		switch algo {
		case "8":
			s := sha256.Sum256(b)
			sum = hex.EncodeToString(s[:])
		case "1":
			s := md5.Sum(b)
			sum = hex.EncodeToString(s[:])
		default:
			t.Fatalf("rpm digest algorithm %s", algo)
		}
		if sum != f[0] {
			t.Errorf("rpm's %s differs from the deb's %s", f[1], debPath)
		}
		delete(same, f[1])
	}
	if len(same) > 0 {
		t.Errorf("rpm lacks %v", same)
	}

	if req := run(t, "rpm", "-qpR", rpm); !regexp.MustCompile(`(?m)^logrotate$`).MatchString(req) {
		t.Errorf("rpm -qpR: no logrotate in\n%s", req)
	}
	scripts := run(t, "rpm", "-qp", "--scripts", rpm)
	for _, s := range []struct{ head, file string }{
		{"postinstall scriptlet", "postinstall.sh"}, {"preuninstall scriptlet", "preremove.sh"}, {"postuninstall scriptlet", "postremove.sh"},
	} {
		body, err := os.ReadFile(filepath.Join("scripts", s.file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(scripts, s.head) || !strings.Contains(scripts, strings.TrimSpace(string(body))) {
			t.Errorf("rpm -qp --scripts: no %s with scripts/%s", s.head, s.file)
		}
	}
}

func TestRPMLint(t *testing.T) {
	need(t, "rpmlint")
	rpm, _ := packages(t)
	rc, err := os.ReadFile("tracer.rpmlintrc")
	if err != nil {
		t.Fatal(err)
	}
	// The License tag is set (TestRPM checks its value): rpmlint's
	// no-license error is not filtered out. Debian's rpmlint lists no
	// valid licenses (ValidLicenses is each distribution's SPDX list), so
	// its invalid-license warnings name every license and are only logged.
	if regexp.MustCompile(`(?mi)^addFilter\(.*licen`).Match(rc) {
		t.Errorf("tracer.rpmlintrc filters out a license finding")
	}
	out, err := exec.Command("rpmlint", "-r", "tracer.rpmlintrc", rpm).CombinedOutput()
	var warnings, errs []string
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.Contains(l, ": W: "):
			warnings = append(warnings, l)
		case strings.Contains(l, ": E: "):
			errs = append(errs, l)
		}
	}
	summary := regexp.MustCompile(`(\d+) errors, (\d+) warnings`).FindStringSubmatch(string(out))
	if summary == nil {
		t.Fatalf("rpmlint printed no summary (%v):\n%s", err, out)
	}
	t.Logf("rpmlint: %s errors, %s warnings (those in tracer.rpmlintrc left out):\n%s", summary[1], summary[2], strings.Join(warnings, "\n"))
	if summary[1] != "0" || len(errs) > 0 || err != nil {
		t.Errorf("rpmlint reports errors (%v):\n%s", err, strings.Join(errs, "\n"))
	}
}

func TestDeb(t *testing.T) {
	need(t, "dpkg-deb")
	_, deb := packages(t)
	root, control := extractDeb(t, deb)
	version := wantVersion(t, filepath.Join(root, "usr/bin/tracer"))
	if base := filepath.Base(deb); base != "tracer_"+version+"_amd64.deb" {
		t.Errorf("deb file %s, want tracer_%s_amd64.deb", base, version)
	}
	fields := run(t, "dpkg-deb", "-f", deb, "Package", "Version", "Architecture", "Maintainer", "Recommends", "Section", "Homepage")
	for _, f := range []string{"Package: tracer\n", "Version: " + version + "-1\n", "Architecture: amd64\n", "Recommends: logrotate\n", "Section: admin\n"} {
		if !strings.Contains(fields, f) {
			t.Errorf("dpkg-deb -f: no %q in\n%s", f, fields)
		}
	}
	t.Logf("dpkg-deb -I:\n%s", run(t, "dpkg-deb", "-I", deb))

	want := wantFiles(t, "deb")
	got := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(run(t, "dpkg-deb", "-c", deb)))
	for sc.Scan() {
		// -rw-r--r-- root/root 1210 2026-12-01 23:51 ./etc/default/tracer
		f := strings.Fields(sc.Text())
		if len(f) != 6 {
			t.Fatalf("dpkg-deb -c line %q", sc.Text())
		}
		mode, owner, path := f[0], f[1], strings.TrimSuffix(strings.TrimPrefix(f[5], "."), "/")
		if owner != "root/root" {
			t.Errorf("deb: %s owned by %s", path, owner)
		}
		w, ok := want[path]
		switch {
		case ok:
			got[path] = true
			if mode != w.mode {
				t.Errorf("deb: %s %s, want %s", mode, path, w.mode)
			}
		case mode == "drwxr-xr-x" && slices.ContainsFunc(slices.Collect(maps.Keys(want)), func(p string) bool { return strings.HasPrefix(p, path+"/") }):
			// a parent directory: /usr, /etc/default...
		default:
			t.Errorf("deb holds %s %s, which it should not", mode, path)
		}
	}
	for p := range want {
		if !got[p] {
			t.Errorf("deb lacks %s", p)
		}
	}

	conffiles, err := os.ReadFile(filepath.Join(control, "conffiles"))
	if err != nil {
		t.Fatal(err)
	}
	wantConf := []string{"/etc/audit/plugins.d/tracer.conf", "/etc/default/tracer", "/etc/logrotate.d/tracer", "/etc/tracer/auditd-plugin.flags"}
	if c := strings.Fields(string(conffiles)); !slices.Equal(slices.Sorted(slices.Values(c)), wantConf) {
		t.Errorf("deb conffiles %v, want %v", c, wantConf)
	}
	for script, file := range map[string]string{"postinst": "postinstall.sh", "prerm": "preremove.sh", "postrm": "postremove.sh"} {
		got, err := os.ReadFile(filepath.Join(control, script))
		if err != nil {
			t.Errorf("deb has no %s: %v", script, err)
			continue
		}
		body, _ := os.ReadFile(filepath.Join("scripts", file))
		if !bytes.Equal(got, body) {
			t.Errorf("deb's %s is not scripts/%s", script, file)
		}
		if out, err := exec.Command("sh", "-n", filepath.Join(control, script)).CombinedOutput(); err != nil {
			t.Errorf("sh -n %s: %v\n%s", script, err, out)
		}
	}

	// The completion scripts are the packaged binary's own.
	for shell, path := range map[string]string{
		"bash": "usr/share/bash-completion/completions/tracer", "zsh": strings.TrimPrefix(zshCompletion["deb"], "/"),
		"fish": "usr/share/fish/vendor_completions.d/tracer.fish",
	} {
		got, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Errorf("deb: %v", err)
			continue
		}
		if want := run(t, filepath.Join(root, "usr/bin/tracer"), "completion", shell); string(got) != want || !strings.Contains(want, "tracer") {
			t.Errorf("deb's /%s is not tracer completion %s", path, shell)
		}
	}

	// One static amd64 binary for every RHEL's glibc.
	bin := filepath.Join(root, "usr/bin/tracer")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		t.Errorf("/usr/bin/tracer is for %v, want x86-64", f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("/usr/bin/tracer is dynamically linked (PT_INTERP): RHEL 7's glibc 2.17 would not run it")
		}
	}
}

func TestPackageVersion(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"v1.2.3", "1.2.3"},
		{"1.2.3", "1.2.3"},
		{"v1.2.3-rc1", "1.2.3~rc1"},
		{"v1.2.3-4-gabc1234", "1.2.3+4.gabc1234"},
		{"v1.2.3-4-gabc1234-dirty", "1.2.3+4.gabc1234.dirty"},
		{"v1.2.3-rc1-4-gabc1234", "1.2.3~rc1+4.gabc1234"},
		{"v1.2.3-dirty", "1.2.3+dirty"},
		{"b7580f2", "0.0.0+git.b7580f2"},
		{"b7580f2-dirty", "0.0.0+git.b7580f2.dirty"},
		{"35236ac-dirty", "0.0.0+git.35236ac.dirty"},
		{"3523612", "0.0.0+git.3523612"},
		{"dev", "0.0.0+dev"},
	} {
		got, err := packageVersion(c.in)
		if err != nil || got != c.want {
			t.Errorf("packageVersion(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "v1.2.3 beta", "v1.2.3/x", "abc"} {
		if got, err := packageVersion(bad); err == nil {
			t.Errorf("packageVersion(%q) = %q, want an error", bad, got)
		}
	}

	// Both package managers order them as git does.
	need(t, "rpm", "dpkg")
	order := []string{"v1.2.3-rc1", "v1.2.3-rc1-4-gabc1234", "v1.2.3", "v1.2.3-4-gabc1234", "v1.2.3-4-gabc1234-dirty", "v1.2.4"}
	for i := 1; i < len(order); i++ {
		a, _ := packageVersion(order[i-1])
		b, _ := packageVersion(order[i])
		if err := exec.Command("dpkg", "--compare-versions", a, "lt", b).Run(); err != nil {
			t.Errorf("dpkg: %s is not before %s", a, b)
		}
		out := strings.TrimSpace(run(t, "rpm", "--eval", fmt.Sprintf("%%{lua: print(rpm.vercmp(%q, %q))}", a, b)))
		if out != "-1" {
			t.Errorf("rpm: vercmp(%s, %s) = %s, want -1", a, b, out)
		}
	}
}

// unit reads a systemd unit file into its settings, in order.
func unit(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := map[string][]string{}
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l[0] == '#' || l[0] == ';' || l[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			t.Fatalf("%s: line %q", path, l)
		}
		u[k] = append(u[k], v)
	}
	return u
}

// envFile reads an EnvironmentFile= as systemd does: KEY=VALUE lines,
// # comments, one pair of quotes around a value removed.
func envFile(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l[0] == '#' || l[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			t.Fatalf("%s: line %q is no KEY=VALUE", path, l)
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		env[strings.TrimSpace(k)] = v
	}
	return env
}

// expand expands a command line as systemd does for Exec*= settings:
// ${VAR} inside a word is the value, one word; $VAR as a word of its own
// is the value split at whitespace (none when empty).
func expand(cmdline string, env map[string]string) []string {
	var argv []string
	for _, w := range strings.Fields(cmdline) {
		if name, ok := strings.CutPrefix(w, "$"); ok && !strings.HasPrefix(name, "{") {
			argv = append(argv, strings.Fields(env[name])...)
			continue
		}
		argv = append(argv, regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`).ReplaceAllStringFunc(w, func(m string) string {
			return env[m[2:len(m)-1]]
		}))
	}
	return argv
}

// k8sContainer is the part of a DaemonSet's container this test reads.
type k8sContainer struct {
	Name            string   `yaml:"name"`
	Args            []string `yaml:"args"`
	SecurityContext struct {
		Capabilities struct {
			Add []string `yaml:"add"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
}

// daemonSetTracers returns the tracer container of each DaemonSet in
// deploy/kubernetes.
func daemonSetTracers(t *testing.T) map[string]k8sContainer {
	t.Helper()
	paths, _ := filepath.Glob("../kubernetes/daemonset-*.yaml")
	out := map[string]k8sContainer{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var ds struct {
			Spec struct {
				Template struct {
					Spec struct {
						Containers []k8sContainer `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		if err := yaml.Unmarshal(b, &ds); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, c := range ds.Spec.Template.Spec.Containers {
			if c.Name == "tracer" {
				out[filepath.Base(p)] = c
			}
		}
	}
	if len(out) != 2 {
		t.Fatalf("tracer containers in ../kubernetes/daemonset-*.yaml: %d, want the audit and the ebpf DaemonSet's", len(out))
	}
	return out
}

// TestUnitTakesTheDaemonSetsFlags: the unit passes every flag the
// DaemonSets pass, each from a variable of the config file, so that a node
// with the package and a pod of the DaemonSet watch alike; fleet.md names
// each variable. The unit adds only --output and --output-max-size (a
// pod writes to its log, stdout, which the kubelet rotates) and
// $TRACER_FLAGS. The shipped config bounds what a flood costs: the
// file's size and each cgroup's event rate.
func TestUnitTakesTheDaemonSetsFlags(t *testing.T) {
	u := unit(t, "files/tracer.service")
	conf := envFile(t, "files/tracer.conf")
	if len(u["ExecStart"]) != 1 {
		t.Fatalf("ExecStart: %v", u["ExecStart"])
	}
	words := strings.Fields(u["ExecStart"][0])
	if len(words) < 2 || words[0] != "/usr/bin/tracer" || words[1] != "watch" {
		t.Fatalf("ExecStart %q: want /usr/bin/tracer watch ...", u["ExecStart"][0])
	}
	fromVar := map[string]string{} // flag: the variable it takes
	var vars []string
	for _, w := range words[2:] {
		if m := regexp.MustCompile(`^(--[a-z.-]+)=\$\{(TRACER_[A-Z_]+)\}$`).FindStringSubmatch(w); m != nil {
			fromVar[m[1]] = m[2]
			vars = append(vars, m[2])
			continue
		}
		if w == "$TRACER_FLAGS" {
			vars = append(vars, "TRACER_FLAGS")
			continue
		}
		t.Errorf("ExecStart word %q: want --flag=${TRACER_VAR} (a flag the DaemonSets pass) or $TRACER_FLAGS", w)
	}
	for _, v := range vars {
		if _, ok := conf[v]; !ok {
			t.Errorf("the unit takes %s, which files/tracer.conf does not set", v)
		}
	}
	for v := range conf {
		if !slices.Contains(vars, v) {
			t.Errorf("files/tracer.conf sets %s, which the unit does not use", v)
		}
	}
	used := map[string]bool{"--output": true, "--output-max-size": true}
	for name, c := range daemonSetTracers(t) {
		if len(c.Args) == 0 || c.Args[0] != "watch" {
			t.Fatalf("%s: args %v", name, c.Args)
		}
		for _, a := range c.Args[1:] {
			flag, value, ok := strings.Cut(a, "=")
			if !ok {
				t.Errorf("%s: arg %q: the test reads --flag=value", name, a)
				continue
			}
			v, ok := fromVar[flag]
			if !ok {
				t.Errorf("%s passes %s; the unit does not (add --%s=${TRACER_...} to ExecStart and the variable to tracer.conf and docs/fleet.md)", name, a, strings.TrimPrefix(flag, "--"))
				continue
			}
			used[flag] = true
			t.Logf("%s: %s=%s; the unit: %s=${%s}, default %q", name, flag, value, flag, v, conf[v])
		}
	}
	for flag := range fromVar {
		if !used[flag] {
			t.Errorf("the unit passes %s, which no DaemonSet does", flag)
		}
	}
	for _, v := range []string{"TRACER_OUTPUT_MAX_SIZE", "TRACER_RATE_LIMIT"} {
		if conf[v] == "" {
			t.Errorf("files/tracer.conf ships no %s: a flood would fill the disk or the output", v)
		}
	}
	for name, c := range daemonSetTracers(t) {
		if !slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--rate-limit=") }) {
			t.Errorf("%s passes no --rate-limit: one pod's flood would cost every pod's events", name)
		}
	}
	if b := conf["TRACER_BACKEND"]; b != "audit" {
		t.Errorf("TRACER_BACKEND=%s: the shipped config must run on RHEL 7 (no BTF): audit", b)
	}
	fleet, err := os.ReadFile("../../docs/fleet.md")
	if err != nil {
		t.Fatal(err)
	}
	for v := range conf {
		if !bytes.Contains(fleet, []byte("`"+v+"`")) {
			t.Errorf("docs/fleet.md does not name `%s`", v)
		}
	}
}

// TestUnitCapabilities: the unit's bounding set is the union of the
// DaemonSets' capabilities, no more.
func TestUnitCapabilities(t *testing.T) {
	u := unit(t, "files/tracer.service")
	var want []string
	for _, c := range daemonSetTracers(t) {
		for _, cp := range c.SecurityContext.Capabilities.Add {
			if !slices.Contains(want, "CAP_"+cp) {
				want = append(want, "CAP_"+cp)
			}
		}
	}
	got := strings.Fields(strings.Join(u["CapabilityBoundingSet"], " "))
	sort.Strings(want)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("CapabilityBoundingSet %v; the DaemonSets add %v", got, want)
	}
	for k, v := range map[string]string{
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
		"ExecStartPre": "/usr/bin/tracer cleanup", "Restart": "on-failure", "ReadWritePaths": "/var/log/tracer -/run/tracer",
		"EnvironmentFile": "-/etc/sysconfig/tracer|-/etc/default/tracer", "AmbientCapabilities": "",
	} {
		if got := strings.Join(u[k], "|"); got != v {
			t.Errorf("%s=%s, want %q", k, got, v)
		}
	}
}

// TestUnitJournalNotRateLimited: --output journal sends every event as a
// journal entry from the service; journald's per-service rate limit
// (10,000 per 30 s by default) would drop them where tracer cannot count
// them, so the unit turns it off. systemd checks the setting's syntax.
func TestUnitJournalNotRateLimited(t *testing.T) {
	u := unit(t, "files/tracer.service")
	if got := strings.Join(u["LogRateLimitIntervalSec"], "|"); got != "0" {
		t.Errorf("LogRateLimitIntervalSec=%s, want 0 (journald's rate limit off for tracer's events)", got)
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		need(t, "systemd-analyze") // make deps installs systemd
	}
	// The unit as it is but for its commands, which need not be installed
	// for systemd to check the settings.
	b, err := os.ReadFile("files/tracer.service")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), "/usr/bin/tracer", "/bin/true")
	s = regexp.MustCompile(`(?m)^Documentation=.*\n`).ReplaceAllString(s, "")
	p := filepath.Join(t.TempDir(), "tracer.service")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("systemd-analyze", "verify", p).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
