// SPDX-License-Identifier: Apache-2.0

package tracer_test

import (
	"encoding/json"
	"errors"
	"io"
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
	{"vocabulary", []string{"tracer/vocab", "auditrules/internal/abi", "bpf"}},
	{"host", []string{"tracer/host", "bench/result"}},
	{"kernel state, rules and mounts", []string{"tracer/auditstate", "auditrules", "auditrules/cost", "tracer/tracefs"}},
	{"contract", []string{"tracer"}},
	{"node facts", []string{"tracer/node"}},
	{"backends and outputs", []string{"tracer/audit", "tracer/bpfbackend", "tracer/sink", "tracer/metrics", "tracer/kube"}},
	{"commands' work", []string{"tracer/watch", "tracer/trace", "bench", "bench/report"}},
	{"command line", []string{"cmd/tracer"}},
}

const module = "github.com/tracer-dev/tracer"

// testOnly are packages that only tests import; they may import anything.
var testOnly = map[string]bool{
	"tracer/tracertest": true, "tracer/node/nodetest": true, "tracer/sink/schematest": true,
	"bpf/tests": true, "tracer/kube/kubetest": true,
}

type listed struct {
	ImportPath string
	Imports    []string
}

func goList(t *testing.T, args ...string) []listed {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Dir = filepath.Dir(filepath.Dir(file))
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

// TestResultIsALeaf: bench/result, which report builds on any system, holds
// no package of the project but the bottom vocabulary.
func TestResultIsALeaf(t *testing.T) {
	var got []string
	for _, p := range goList(t, "-deps", "./bench/result") {
		if r, ok := rel(p.ImportPath); ok && r != "bench/result" && r != "tracer/vocab" {
			got = append(got, r)
		}
	}
	sort.Strings(got)
	if len(got) > 0 {
		t.Errorf("bench/result depends on %v; it must hold no package of the project but tracer/vocab", got)
	}
}
