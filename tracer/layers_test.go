// SPDX-License-Identifier: Apache-2.0

package tracer_test

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// The project's layers, bottom first. A package may import the project's
// packages of lower layers only: never one above it, nor one beside it
// (what two packages of a layer share belongs a layer down).
// docs/architecture.md draws the same picture.
var layers = []struct {
	name string
	pkgs []string
}{
	{"vocabulary", []string{"tracer/vocab", "auditrules/internal/abi", "bpf", "tracer/node/facts"}},
	{"host", []string{"tracer/host", "bench/result", "tracer/auparse"}},
	{"contract, kernel state, rules", []string{"tracer", "tracer/auditstate", "auditrules", "auditrules/cost", "tracer/tracefs"}},
	{"backends, outputs, node facts", []string{"tracer/audit", "tracer/bpfbackend", "tracer/sink", "tracer/metrics", "tracer/node", "tracer/kube"}},
	{"commands' work", []string{"tracer/watch", "tracer/trace", "bench", "bench/report"}},
	{"command line", []string{"cmd/tracer"}},
}

// leaves are the packages docs/architecture.md says import nothing of the
// project, or only the packages named, directly or not: on Linux and on
// macOS (where report and rules run), as each builds there.
var leaves = map[string][]string{
	"tracer/vocab":            nil,
	"auditrules/internal/abi": nil,
	"bpf":                     nil,
	"tracer/node/facts":       nil,
	"tracer/auparse":          {"tracer/vocab"},
	"tracer/host":             {"tracer/vocab"},
	"bench/result":            {"tracer/node/facts"},
	"tracer/auditstate":       {"tracer/host", "tracer/vocab"},
	"auditrules":              {"tracer/vocab", "auditrules/internal/abi"},
	"auditrules/cost":         {"auditrules/internal/abi"},
	"tracer":                  {"tracer/host", "tracer/vocab"},
}

const module = "github.com/tracer-dev/tracer"

// testOnly are packages that only tests (or go generate) use; they may
// import anything.
var testOnly = map[string]bool{
	"tracer/tracertest": true, "tracer/node/nodetest": true, "tracer/sink/schematest": true, "tracer/kube/kubetest": true,
	"bpf/tests": true,
	// make test-kernels' program.
	"tracer/tracertest/kernels": true,
	// go generate's program that builds schematest's OCSF schema.
	"tracer/sink/schematest/internal/ocsfgen": true,
}

type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func goList(t *testing.T, args ...string) []listed {
	t.Helper()
	return goListOS(t, "", args...)
}

// goListOS is go list for GOOS goos ("": this system's).
func goListOS(t *testing.T, goos string, args ...string) []listed {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Dir = filepath.Dir(filepath.Dir(file))
	if goos != "" {
		cmd.Env = append(os.Environ(), "GOOS="+goos)
	}
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Skipf("go list not available: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []listed
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func rel(path string) (string, bool) {
	if path == module {
		return "", false
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

// TestLayers fails when a package imports one of a higher layer or of its
// own, and when a package of the project is in no
// layer: a new package says where it belongs.
func TestLayers(t *testing.T) {
	layerOf := map[string]int{}
	for i, l := range layers {
		for _, p := range l.pkgs {
			layerOf[p] = i
		}
	}
	for _, p := range goList(t, "./...") {
		from, ok := rel(p.ImportPath)
		if !ok || testOnly[from] {
			continue
		}
		lf, known := layerOf[from]
		if !known {
			t.Errorf("%s is in no layer: add it to layers in tracer/layers_test.go and to docs/architecture.md", from)
			continue
		}
		for _, imp := range p.Imports {
			to, ok := rel(imp)
			if !ok {
				continue
			}
			if testOnly[to] {
				t.Errorf("%s imports the test-only package %s", from, to)
				continue
			}
			lt, known := layerOf[to]
			switch {
			case !known:
				// reported as its own package
			case lt > lf:
				t.Errorf("%s (%s) imports %s (%s): a lower layer must not import a higher one", from, layers[lf].name, to, layers[lt].name)
			case lt == lf:
				t.Errorf("%s imports %s of its own layer (%s): move what they share down a layer", from, to, layers[lf].name)
			}
		}
	}
}

// TestLeaves: what docs/architecture.md says a package imports of the
// project ("imports nothing of the project", "only tracer/vocab") holds,
// directly and through its imports, for a Linux build and a macOS one.
func TestLeaves(t *testing.T) {
	for _, goos := range []string{"linux", "darwin"} {
		deps := map[string][]string{}
		for _, p := range goListOS(t, goos, "./...") {
			if r, in := rel(p.ImportPath); in {
				deps[r] = p.Deps
			}
		}
		for pkg, allowed := range leaves {
			if _, listed := deps[pkg]; !listed {
				t.Errorf("GOOS=%s: %s is not a package of the project", goos, pkg)
			}
			ok := map[string]bool{pkg: true}
			for _, a := range allowed {
				ok[a] = true
			}
			var extra []string
			for _, d := range deps[pkg] {
				if r, in := rel(d); in && !ok[r] {
					extra = append(extra, r)
				}
			}
			sort.Strings(extra)
			if len(extra) > 0 {
				t.Errorf("GOOS=%s: %s depends on %v; docs/architecture.md says it holds no package of the project but %v", goos, pkg, extra, allowed)
			}
		}
	}
}

// TestEBPFBackendDeps: the eBPF backend builds on neither node's facts nor
// the audit rules: what it needs of the node (the lockdown mode) is host's.
func TestEBPFBackendDeps(t *testing.T) {
	for _, p := range goList(t, "-deps", "./tracer/bpfbackend") {
		r, in := rel(p.ImportPath)
		if in && (strings.HasPrefix(r, "tracer/node") || strings.HasPrefix(r, "bench") || strings.HasPrefix(r, "auditrules")) {
			t.Errorf("tracer/bpfbackend depends on %s", r)
		}
	}
}
