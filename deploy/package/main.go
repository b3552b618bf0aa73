// SPDX-License-Identifier: Apache-2.0

// Command package builds tracer's RPM and deb, tracer-VERSION.x86_64.rpm
// and tracer_VERSION_amd64.deb, from nfpm.yaml with nfpm's library: the
// static binary, tracer.service, its config file, a logrotate snippet, the
// docs, the man pages and the shell completion (bash, zsh, fish) the
// binary writes. make package runs it.
//
// It is a module of its own, apart from the tracer module and from the
// deploy module's manifest tests: nfpm brings some forty modules (the RPM
// and deb writers, PGP, go-git for changelogs) that neither should carry.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager
)

// options say what to package and where to put it.
type options struct {
	Binary     string // the tracer binary, linux/amd64
	ManDir     string // the man pages, *.8.gz
	DocDir     string // README.md and docs/*.md
	Out        string // the directory the packages go to
	Version    string // tracer's version; empty: what Binary reports
	Maintainer string
	Config     string // nfpm.yaml; relative paths in it are from its directory
}

const defaultMaintainer = "tracer maintainers <tracer-dev@users.noreply.github.com>"

func main() {
	var o options
	flag.StringVar(&o.Binary, "binary", "", "the tracer binary to package (linux/amd64, static)")
	flag.StringVar(&o.ManDir, "man", "", "the directory of the gzipped man pages (*.8.gz)")
	flag.StringVar(&o.DocDir, "doc", "", "the directory of README.md and docs/*.md (make package copies them there)")
	flag.StringVar(&o.Out, "out", "dist", "the directory to write the packages to")
	flag.StringVar(&o.Version, "version", "", "the version (default: the one the binary reports, made rpm- and deb-safe)")
	flag.StringVar(&o.Maintainer, "maintainer", defaultMaintainer, "the packages' maintainer, Name <email>")
	flag.StringVar(&o.Config, "config", "nfpm.yaml", "the nfpm configuration")
	flag.Parse()
	if o.Binary == "" || o.ManDir == "" || o.DocDir == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "package: give -binary, -man and -doc (make package does): package -binary build/package/tracer -man build/package/man -doc build/package/doc -out dist")
		os.Exit(2)
	}
	paths, err := build(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "package:", err)
		os.Exit(1)
	}
	for _, p := range paths {
		fmt.Println(p)
	}
}

// formats are the packagers built, with their file names.
var formats = []struct {
	name string
	file func(version string) string
}{
	{"rpm", func(v string) string { return "tracer-" + v + ".x86_64.rpm" }},
	{"deb", func(v string) string { return "tracer_" + v + "_amd64.deb" }},
}

// build writes both packages to o.Out and returns their paths.
func build(o options) ([]string, error) {
	abs := func(p *string) error {
		a, err := filepath.Abs(*p)
		*p = a
		return err
	}
	for _, p := range []*string{&o.Binary, &o.ManDir, &o.DocDir, &o.Out, &o.Config} {
		if err := abs(p); err != nil {
			return nil, err
		}
	}
	v := o.Version
	if v == "" {
		var err error
		if v, err = binaryVersion(o.Binary); err != nil {
			return nil, err
		}
	}
	version, err := packageVersion(v)
	if err != nil {
		return nil, err
	}
	compDir, err := os.MkdirTemp("", "tracer-completion-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(compDir)
	if err := writeCompletions(o.Binary, compDir); err != nil {
		return nil, err
	}
	env := map[string]string{
		"VERSION": version, "BINARY": o.Binary, "MANDIR": o.ManDir, "DOCDIR": o.DocDir,
		"COMPDIR": compDir, "MAINTAINER": o.Maintainer,
	}
	// nfpm reads the scripts and other relative sources from the working
	// directory.
	if err := os.Chdir(filepath.Dir(o.Config)); err != nil {
		return nil, err
	}
	cfg, err := nfpm.ParseFileWithEnvMapping(o.Config, func(k string) string { return env[k] })
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", o.Config, err)
	}
	if cfg.Contents, err = expandDocGlobs(cfg.Contents); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("checking %s: %w", o.Config, err)
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range formats {
		p, err := write(&cfg, f.name, filepath.Join(o.Out, f.file(version)))
		if err != nil {
			return nil, fmt.Errorf("building the %s: %w", f.name, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// write builds the package of format to path.
func write(cfg *nfpm.Config, format, path string) (string, error) {
	info, err := cfg.Get(format)
	if err != nil {
		return "", err
	}
	if format != "rpm" {
		// nfpm leaves doc files out of other packages: there they are
		// plain files.
		for i, c := range info.Contents {
			if c.Type == files.TypeRPMDoc {
				d := *c
				d.Type = files.TypeFile
				info.Contents[i] = &d
			}
		}
	}
	info = nfpm.WithDefaults(info)
	pkg, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	info.Target = path
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return "", err
	}
	err = pkg.Package(info, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return path, nil
}

// expandDocGlobs gives each file of a doc entry's glob an entry of its
// own: nfpm globs only plain and config files, and a doc file is one that
// rpm --excludedocs leaves out and rpm -qd lists.
func expandDocGlobs(in files.Contents) (files.Contents, error) {
	var out files.Contents
	for _, c := range in {
		if c.Type != files.TypeRPMDoc || !strings.ContainsAny(c.Source, "*?[") {
			out = append(out, c)
			continue
		}
		matches, err := filepath.Glob(c.Source)
		if err != nil || len(matches) == 0 {
			return nil, fmt.Errorf("docs %s: no such files", c.Source)
		}
		for _, m := range matches {
			d := *c
			d.Source, d.Destination = m, strings.TrimSuffix(c.Destination, "/")+"/"+filepath.Base(m)
			out = append(out, &d)
		}
	}
	return out, nil
}

// completions are the shells whose completion the packages hold, with the
// file name each shell's directory wants.
var completions = []struct{ shell, file string }{
	{"bash", "tracer"}, {"zsh", "_tracer"}, {"fish", "tracer.fish"},
}

// writeCompletions writes the binary's own completion scripts to dir: they
// complete the flags and values of the binary packaged with them.
func writeCompletions(bin, dir string) error {
	for _, c := range completions {
		out, err := exec.Command(bin, "completion", c.shell).Output()
		if err != nil {
			return fmt.Errorf("asking %s for its %s completion: %w", bin, c.shell, err)
		}
		if err := os.WriteFile(filepath.Join(dir, c.file), out, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// binaryVersion is the version the binary reports: tracer version's
// first line, "tracer VERSION".
func binaryVersion(bin string) (string, error) {
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		return "", fmt.Errorf("asking %s its version: %w", bin, err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	v, ok := strings.CutPrefix(first, "tracer ")
	if !ok || v == "" {
		return "", fmt.Errorf("%s version printed %q, not tracer VERSION", bin, first)
	}
	return v, nil
}

var (
	// git describe's "TAG-N-gHASH" past a tag.
	describeRE = regexp.MustCompile(`^(.*)-([0-9]+)-(g[0-9a-f]+)$`)
	// git describe --always's abbreviated commit, where no tag is.
	commitRE = regexp.MustCompile(`^[0-9a-f]{7,40}$`)
	// What both rpm (no '-') and dpkg (a digit first) take.
	safeRE = regexp.MustCompile(`^[0-9][A-Za-z0-9.+~]*$`)
)

// packageVersion turns what git describe --tags --always --dirty gave the
// binary into a version rpm and dpkg both take and order as git does:
// v1.2.3 is 1.2.3, v1.2.3-rc1 is 1.2.3~rc1 (before 1.2.3),
// v1.2.3-4-gabc123 is 1.2.3+4.gabc123 (after it), a bare commit abc123 is
// 0.0.0+git.abc123, and -dirty adds .dirty (+dirty).
func packageVersion(v string) (string, error) {
	if v == "" {
		return "", errors.New("no version: give -version, or a binary that reports one")
	}
	s := strings.TrimPrefix(v, "v")
	var build []string
	if t, ok := strings.CutSuffix(s, "-dirty"); ok {
		s = t
		build = append(build, "dirty")
	}
	if m := describeRE.FindStringSubmatch(s); m != nil {
		s = m[1]
		build = append([]string{m[2], m[3]}, build...)
	}
	switch {
	case commitRE.MatchString(s) && !strings.HasPrefix(v, "v"):
		// No tag: a commit (which may start with a digit).
		s, build = "0.0.0", append([]string{"git", s}, build...)
	case s == "dev":
		// A build outside git.
		s, build = "0.0.0", append([]string{"dev"}, build...)
	}
	// A tag's prerelease (1.2.3-rc1) sorts before the release.
	s = strings.ReplaceAll(s, "-", "~")
	if len(build) > 0 {
		s += "+" + strings.Join(build, ".")
	}
	if !safeRE.MatchString(s) {
		return "", errors.New("version " + v + " makes " + s + ", which rpm or dpkg would refuse: tag the commit vMAJOR.MINOR.PATCH, or give -version")
	}
	return s, nil
}
