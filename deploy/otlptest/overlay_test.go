// SPDX-License-Identifier: Apache-2.0

package otlptest

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestFleetOverlaySwitchesToOTLP: the kustomize overlay docs/fleet.md
// gives applies to both DaemonSets as they are (its test op finds
// --format=json where it replaces it) and leaves the tracer container
// with --output otlp:// and --allow-cleartext, and without --format,
// which that output refuses.
func TestFleetOverlaySwitchesToOTLP(t *testing.T) {
	doc, err := os.ReadFile("../../docs/fleet.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, found := strings.Cut(string(doc), "```yaml\n# my-overlay/kustomization.yaml\n")
	if !found {
		t.Fatal("docs/fleet.md has no ```yaml block starting with # my-overlay/kustomization.yaml")
	}
	block, _, _ := strings.Cut(rest, "```")
	var k struct {
		Resources []string
		Patches   []struct {
			Target struct{ Kind, Name string }
			Patch  string
		}
	}
	if err := yaml.Unmarshal([]byte(block), &k); err != nil {
		t.Fatalf("the overlay: %v", err)
	}
	if !slices.Equal(k.Resources, []string{"../deploy/kubernetes"}) || len(k.Patches) != 1 {
		t.Fatalf("the overlay: %+v", k)
	}
	p := k.Patches[0]
	var ops []struct {
		Op, Path string
		Value    any
	}
	if err := yaml.Unmarshal([]byte(p.Patch), &ops); err != nil {
		t.Fatalf("the patch: %v", err)
	}
	name := regexp.MustCompile("^(?:" + p.Target.Name + ")$")
	for _, ds := range []string{"tracer-ebpf", "tracer-audit"} {
		if p.Target.Kind != "DaemonSet" || !name.MatchString(ds) {
			t.Errorf("the patch's target %+v does not select %s", p.Target, ds)
			continue
		}
		b, err := os.ReadFile("../kubernetes/daemonset-" + strings.TrimPrefix(ds, "tracer-") + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		var m any
		if err := yaml.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			if err := applyOp(m, op.Op, op.Path, op.Value); err != nil {
				t.Errorf("%s: %s %s: %v", ds, op.Op, op.Path, err)
			}
		}
		c := get(m, "/spec/template/spec/containers/0").(map[string]any)
		var args []string
		for _, a := range c["args"].([]any) {
			args = append(args, a.(string))
		}
		// otlp:// is cleartext, which watch refuses without --allow-cleartext.
		if c["name"] != "tracer" || args[0] != "watch" || !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--output=otlp://") }) ||
			!slices.Contains(args, "--allow-cleartext") ||
			slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--format") }) {
			t.Errorf("%s: the tracer container after the patch: %s %q", ds, c["name"], args)
		}
	}
}

// get walks a JSON pointer; nil where it leads nowhere.
func get(v any, path string) any {
	for _, s := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		switch x := v.(type) {
		case map[string]any:
			v = x[s]
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// applyOp applies one RFC 6902 op of the kinds the overlay uses: test,
// replace (an existing element), add (a member of an object, or /- at
// an array's end).
func applyOp(doc any, op, path string, value any) error {
	i := strings.LastIndex(path, "/")
	parent, last := get(doc, path[:i]), path[i+1:]
	switch op {
	case "test":
		if got := get(doc, path); got != value {
			return fmt.Errorf("found %v, want %v", got, value)
		}
	case "replace":
		if get(doc, path) == nil {
			return fmt.Errorf("nothing to replace")
		}
		switch x := parent.(type) {
		case []any:
			n, _ := strconv.Atoi(last)
			x[n] = value
		case map[string]any:
			x[last] = value
		}
	case "add":
		if x, ok := parent.([]any); ok && last == "-" {
			// The end of an array: its parent holds it under its name.
			j := strings.LastIndex(path[:i], "/")
			holder, ok := get(doc, path[:j]).(map[string]any)
			if !ok {
				return fmt.Errorf("no object holds %s", path[:i])
			}
			holder[path[j+1:i]] = append(x, value)
			return nil
		}
		x, ok := parent.(map[string]any)
		if !ok {
			return fmt.Errorf("no object to add to")
		}
		x[last] = value
	default:
		return fmt.Errorf("op %q", op)
	}
	return nil
}
