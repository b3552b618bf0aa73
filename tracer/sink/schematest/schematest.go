// SPDX-License-Identifier: Apache-2.0

// Package schematest checks documents against the published schemas the
// ecs and ocsf formats follow: ECS's field definitions (ECS) and OCSF's
// JSON Schema of Process Activity (OCSF), copies of which it embeds
// (testdata/*/README.md says where each comes from). Tests of the
// encoders and of `tracer watch --format ecs|ocsf` use it.
package schematest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// ECSVersion and OCSFVersion are the releases of the embedded schemas.
const (
	ECSVersion  = "9.4.0"
	OCSFVersion = "1.8.0"
)

//go:embed testdata/ecs/ecs_flat.yml
var ecsFlat []byte

//go:generate go run ./internal/ocsfgen

//go:embed testdata/ocsf/process_activity.schema.json
var ocsfSchema []byte

// ecsField is one field of ecs_flat.yml.
type ecsField struct {
	Type          string       `yaml:"type"`
	Normalize     []string     `yaml:"normalize"`
	AllowedValues []ecsAllowed `yaml:"allowed_values"`
}

type ecsAllowed struct {
	Name               string   `yaml:"name"`
	ExpectedEventTypes []string `yaml:"expected_event_types"`
}

var ecsFields = sync.OnceValues(func() (map[string]ecsField, error) {
	var f map[string]ecsField
	if err := yaml.Unmarshal(ecsFlat, &f); err != nil {
		return nil, fmt.Errorf("reading ecs_flat.yml: %w", err)
	}
	return f, nil
})

// ECS checks doc, one JSON object, against ECS: every field (a leaf, its
// name the dotted path) is an ECS field with a value of its type (an array
// of them where ECS normalizes it to an array, a scalar elsewhere), or is
// under tracer.; a field with allowed values has one of them; every
// event.type is one that each event.category expects; @timestamp and
// ecs.version are there. It returns every problem found, joined.
func ECS(doc []byte) error {
	fields, err := ecsFields()
	if err != nil {
		return err
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	if d.More() {
		return fmt.Errorf("more than one JSON value")
	}
	flat := map[string]any{}
	flatten("", m, flat)
	var probs []string
	bad := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	for _, name := range []string{"@timestamp", "ecs.version"} {
		if _, ok := flat[name]; !ok {
			bad("%s missing", name)
		}
	}
	names := make([]string, 0, len(flat))
	for k := range flat {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		v := flat[name]
		if strings.HasPrefix(name, "tracer.") {
			continue
		}
		f, ok := fields[name]
		if !ok {
			if p := objectParent(fields, name); p != "" {
				continue // inside an ECS object field (labels, ...)
			}
			bad("%s is not an ECS %s field (put it under tracer.)", name, ECSVersion)
			continue
		}
		arr, isArr := v.([]any)
		wantArr := slices.Contains(f.Normalize, "array")
		switch {
		case isArr && !wantArr:
			bad("%s is an array; ECS has one %s", name, f.Type)
			continue
		case !isArr && wantArr:
			bad("%s is a %T; ECS normalizes it to an array", name, v)
			continue
		case !isArr:
			arr = []any{v}
		}
		for _, x := range arr {
			if err := ecsType(f.Type, x); err != nil {
				bad("%s: %v", name, err)
			} else if len(f.AllowedValues) > 0 && !allowed(f, x) {
				bad("%s: %v is not one of ECS's allowed values", name, x)
			}
		}
	}
	probs = append(probs, eventTypesFit(fields, flat)...)
	if len(probs) > 0 {
		return fmt.Errorf("not ECS %s: %s", ECSVersion, strings.Join(probs, "; "))
	}
	return nil
}

// flatten puts the leaves of v into out by dotted path; arrays are leaves.
func flatten(prefix string, v any, out map[string]any) {
	if m, ok := v.(map[string]any); ok && (prefix == "" || len(m) > 0) {
		for k, x := range m {
			if prefix != "" {
				k = prefix + "." + k
			}
			flatten(k, x, out)
		}
		return
	}
	out[prefix] = v
}

// objectParent returns the ECS field of type object or flattened that
// holds name, if one does.
func objectParent(fields map[string]ecsField, name string) string {
	for i := strings.LastIndexByte(name, '.'); i > 0; i = strings.LastIndexByte(name[:i], '.') {
		if f, ok := fields[name[:i]]; ok && (f.Type == "object" || f.Type == "flattened") {
			return name[:i]
		}
	}
	return ""
}

// ecsType checks that JSON value v fits ECS type t.
func ecsType(t string, v any) error {
	switch t {
	case "keyword", "constant_keyword", "wildcard", "text", "match_only_text":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%v is a %T, ECS's type is %s (a string)", v, v, t)
		}
	case "long", "integer", "short", "byte", "unsigned_long":
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("%v is a %T, ECS's type is %s", v, v, t)
		}
		lo, hi := intRange(t)
		if t == "unsigned_long" {
			if _, err := parseUint(n.String()); err != nil {
				return fmt.Errorf("%v is not an unsigned_long", v)
			}
			return nil
		}
		i, err := n.Int64()
		if err != nil || i < lo || i > hi {
			return fmt.Errorf("%v is not a %s", v, t)
		}
	case "float", "double", "scaled_float", "half_float":
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("%v is a %T, ECS's type is %s", v, v, t)
		}
		if _, err := n.Float64(); err != nil {
			return fmt.Errorf("%v is not a number", v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%v is a %T, ECS's type is boolean", v, v)
		}
	case "date":
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%v is a %T, ECS's type is date", v, v)
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return fmt.Errorf("%q is not an RFC 3339 date: %v", s, err)
		}
	case "ip":
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%v is a %T, ECS's type is ip", v, v)
		}
		if _, err := netip.ParseAddr(s); err != nil {
			return fmt.Errorf("%q is not an ip", s)
		}
	case "object", "flattened", "nested":
		if _, ok := v.(map[string]any); !ok {
			return fmt.Errorf("%v is a %T, ECS's type is %s", v, v, t)
		}
	default:
		return fmt.Errorf("ECS type %s is not checked here", t)
	}
	return nil
}

func intRange(t string) (lo, hi int64) {
	switch t {
	case "integer":
		return math.MinInt32, math.MaxInt32
	case "short":
		return math.MinInt16, math.MaxInt16
	case "byte":
		return math.MinInt8, math.MaxInt8
	}
	return math.MinInt64, math.MaxInt64
}

func parseUint(s string) (uint64, error) {
	var u uint64
	_, err := fmt.Sscan(s, &u)
	if err == nil && strings.ContainsAny(s, ".eE-") {
		err = fmt.Errorf("not an integer")
	}
	return u, err
}

func allowed(f ecsField, v any) bool {
	s, ok := v.(string)
	return ok && slices.ContainsFunc(f.AllowedValues, func(a ecsAllowed) bool { return a.Name == s })
}

// eventTypesFit checks each event.type against each event.category's
// expected event types.
func eventTypesFit(fields map[string]ecsField, flat map[string]any) []string {
	cats, _ := flat["event.category"].([]any)
	types, _ := flat["event.type"].([]any)
	var probs []string
	for _, c := range cats {
		for _, a := range fields["event.category"].AllowedValues {
			if a.Name != c {
				continue
			}
			for _, t := range types {
				if ts, _ := t.(string); !slices.Contains(a.ExpectedEventTypes, ts) {
					probs = append(probs, fmt.Sprintf("event.type %v is not one event.category %v expects (%s)", t, c, strings.Join(a.ExpectedEventTypes, ", ")))
				}
			}
		}
	}
	return probs
}

var ocsfCompiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(ocsfSchema))
	if err != nil {
		return nil, fmt.Errorf("reading the OCSF schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	const url = "process_activity.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("adding the OCSF schema: %w", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("compiling the OCSF schema: %w", err)
	}
	return s, nil
})

// OCSF validates doc, one JSON object, against OCSF's Process Activity
// class (1007) of OCSF 1.8.0 with the linux extension.
func OCSF(doc []byte) error {
	s, err := ocsfCompiled()
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("not OCSF %s Process Activity: %w", OCSFVersion, err)
	}
	return nil
}
