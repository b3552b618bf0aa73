// SPDX-License-Identifier: Apache-2.0

// Command ocsfgen builds testdata/ocsf/process_activity.schema.json, the
// JSON Schema of OCSF's Process Activity class that schematest.OCSF
// validates against, from the schema's own source: testdata/ocsf/
// ocsf-schema-1.8.0.tar.gz, the files of https://github.com/ocsf/ocsf-schema
// at tag 1.8.0 it needs (testdata/ocsf/README.md says how it was made and
// the rules followed; a test checks its checksum). Run it with go generate
// in tracer/sink/schematest.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
)

func main() {
	in := flag.String("in", "testdata/ocsf/ocsf-schema-1.8.0.tar.gz", "the schema's source, as a tar.gz")
	out := flag.String("out", "testdata/ocsf/process_activity.schema.json", "the JSON Schema to write")
	flag.Parse()
	b, err := build(*in)
	if err == nil {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ocsfgen:", err)
		os.Exit(1)
	}
}

// attr is one attribute's entry: the dictionary's, a class's or an
// object's, merged field by field.
type attr map[string]any

// item is a class or object source file.
type item struct {
	Name       string          `json:"name"`
	Extends    string          `json:"extends"`
	Attributes json.RawMessage `json:"attributes"`
	// Constraints nil: none of its own, the extended item's hold; an
	// empty object clears them.
	Constraints *struct {
		AtLeastOne []string `json:"at_least_one"`
		JustOne    []string `json:"just_one"`
	} `json:"constraints"`
}

type source struct {
	files map[string][]byte // by path in the repository
	dict  map[string]attr
	types map[string]attr
}

func readTarGz(file string) (map[string][]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		} else if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		// Paths are relative to the repository: drop the archive's prefix.
		_, rel, _ := strings.Cut(h.Name, "/")
		files[rel] = b
	}
}

// attributes reads an item's attributes with their $include'd files'
// (relative to the repository, or to the extension the item is of); an
// included profile's attributes carry its name in "profile".
func (s *source) attributes(file string, raw json.RawMessage) (map[string]attr, error) {
	var m map[string]json.RawMessage
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	out := map[string]attr{}
	if inc, ok := m["$include"]; ok {
		var paths []string
		if err := json.Unmarshal(inc, &paths); err != nil {
			return nil, fmt.Errorf("%s: $include: %w", file, err)
		}
		for _, p := range paths {
			full := p
			if ext, ok := strings.CutPrefix(file, "extensions/"); ok {
				full = "extensions/" + strings.SplitN(ext, "/", 2)[0] + "/" + p
			}
			b, ok := s.files[full]
			if !ok {
				return nil, fmt.Errorf("%s: $include %s: not in the source", file, full)
			}
			var it struct {
				Name       string          `json:"name"`
				Meta       string          `json:"meta"`
				Attributes json.RawMessage `json:"attributes"`
			}
			if err := json.Unmarshal(b, &it); err != nil {
				return nil, fmt.Errorf("%s: %w", full, err)
			}
			attrs, err := s.attributes(full, it.Attributes)
			if err != nil {
				return nil, err
			}
			for n, a := range attrs {
				if it.Meta == "profile" {
					if _, set := a["profile"]; !set {
						a["profile"] = it.Name
					}
				}
				merge(out, n, a)
			}
		}
	}
	for n, r := range m {
		if n == "$include" {
			continue
		}
		var a attr
		if err := json.Unmarshal(r, &a); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", file, n, err)
		}
		merge(out, n, a)
	}
	return out, nil
}

// merge puts a over what into holds for n: a later entry wins, field by
// field, and enums are merged.
func merge(into map[string]attr, n string, a attr) {
	old, ok := into[n]
	if !ok {
		into[n] = clone(a)
		return
	}
	for k, v := range a {
		if k == "enum" {
			if oe, ok := old["enum"].(map[string]any); ok {
				if ne, ok := v.(map[string]any); ok {
					m := map[string]any{}
					for x, y := range oe {
						m[x] = y
					}
					for x, y := range ne {
						m[x] = y
					}
					old[k] = m
					continue
				}
			}
		}
		old[k] = v
	}
}

func clone(a attr) attr {
	c := attr{}
	for k, v := range a {
		c[k] = v
	}
	return c
}

// chain reads an item and those it extends, the base first, merged: an
// item's own entry wins over the one it extends. Objects are found by
// name: objects/NAME.json, then the linux extension's patch of it.
func (s *source) object(name string) (*item, map[string]attr, error) {
	file := "objects/" + name + ".json"
	b, ok := s.files[file]
	if !ok {
		return nil, nil, fmt.Errorf("object %s: not in the source", name)
	}
	var it item
	if err := json.Unmarshal(b, &it); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	attrs := map[string]attr{}
	if it.Extends != "" {
		bi, base, err := s.object(it.Extends)
		if err != nil {
			return nil, nil, err
		}
		attrs = base
		if it.Constraints == nil {
			it.Constraints = bi.Constraints
		}
	}
	own, err := s.attributes(file, it.Attributes)
	if err != nil {
		return nil, nil, err
	}
	for n, a := range own {
		merge(attrs, n, a)
	}
	// The linux extension patches objects: a file that extends one of the
	// same name with no name of its own.
	if pb, ok := s.files["extensions/linux/objects/"+name+".json"]; ok {
		var p item
		if err := json.Unmarshal(pb, &p); err != nil {
			return nil, nil, err
		}
		if p.Name == "" && p.Extends == name {
			patch, err := s.attributes("extensions/linux/objects/"+name+".json", p.Attributes)
			if err != nil {
				return nil, nil, err
			}
			for n, a := range patch {
				merge(attrs, n, a)
			}
		}
	}
	return &it, attrs, nil
}

func (s *source) class(file string) (map[string]attr, error) {
	b, ok := s.files[file]
	if !ok {
		return nil, fmt.Errorf("%s: not in the source", file)
	}
	var it item
	if err := json.Unmarshal(b, &it); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	attrs := map[string]attr{}
	if it.Extends != "" {
		base := "events/" + it.Extends + ".json"
		if _, ok := s.files[base]; !ok {
			base = path.Join(path.Dir(file), it.Extends+".json")
		}
		var err error
		if attrs, err = s.class(base); err != nil {
			return nil, err
		}
	}
	own, err := s.attributes(file, it.Attributes)
	if err != nil {
		return nil, err
	}
	for n, a := range own {
		merge(attrs, n, a)
	}
	return attrs, nil
}

// baseType follows a dictionary type to the one it is built on.
func (s *source) baseType(t string) string {
	for i := 0; i < 10; i++ {
		tt, ok := s.types[t]
		if !ok {
			return t
		}
		up, _ := tt["type"].(string)
		if up == "" {
			return t
		}
		t = up
	}
	return t
}

// valueRange is an integer attribute's range, its own or its type's.
func (s *source) valueRange(a attr) []any {
	if r, ok := a["range"].([]any); ok {
		return r
	}
	t, _ := a["type"].(string)
	for i := 0; i < 10 && t != ""; i++ {
		tt, ok := s.types[t]
		if !ok {
			break
		}
		if r, ok := tt["range"].([]any); ok {
			return r
		}
		t, _ = tt["type"].(string)
	}
	return nil
}

// ordered is a JSON object whose keys keep the order they were set in.
type ordered struct {
	keys []string
	vals map[string]any
}

func newOrdered() *ordered { return &ordered{vals: map[string]any{}} }

func (o *ordered) set(k string, v any) *ordered {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
	return o
}

func (o *ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

type gen struct {
	*source
	defs    map[string]any
	pending []string
}

// property is an attribute's schema: its dictionary type (or $ref), as an
// array where is_array, with the enum values of an integer.
func (g *gen) property(name string, a attr) (any, error) {
	d, ok := g.dict[name]
	if !ok {
		return nil, fmt.Errorf("attribute %s: not in the dictionary", name)
	}
	full := clone(d)
	for k, v := range a {
		if k == "enum" {
			if de, ok := full["enum"].(map[string]any); ok {
				if ae, ok := v.(map[string]any); ok {
					m := map[string]any{}
					for x, y := range de {
						m[x] = y
					}
					for x, y := range ae {
						m[x] = y
					}
					full["enum"] = m
					continue
				}
			}
		}
		if k == "type" || k == "is_array" || k == "enum" {
			full[k] = v
		}
	}
	t, _ := full["type"].(string)
	var p *ordered
	switch bt := g.baseType(t); bt {
	case "string_t":
		p = newOrdered().set("type", "string")
	case "integer_t", "long_t":
		p = newOrdered().set("type", "integer")
		if r := g.valueRange(full); len(r) == 2 {
			p.set("minimum", r[0]).set("maximum", r[1])
		}
		if e, ok := full["enum"].(map[string]any); ok {
			var vals []int
			for k := range e {
				n, err := strconv.Atoi(k)
				if err != nil {
					return nil, fmt.Errorf("attribute %s: enum value %q", name, k)
				}
				vals = append(vals, n)
			}
			sort.Ints(vals)
			p.set("enum", vals)
		}
	case "float_t":
		p = newOrdered().set("type", "number")
	case "boolean_t":
		p = newOrdered().set("type", "boolean")
	case "json_t":
		p = newOrdered()
	case "object":
		p = newOrdered().set("type", "object")
	default:
		if _, ok := g.files["objects/"+bt+".json"]; !ok {
			return nil, fmt.Errorf("attribute %s: type %s is neither a type nor an object", name, bt)
		}
		if _, seen := g.defs[bt]; !seen {
			g.defs[bt] = nil
			g.pending = append(g.pending, bt)
		}
		p = newOrdered().set("$ref", "#/$defs/"+bt)
	}
	if arr, _ := full["is_array"].(bool); arr {
		return newOrdered().set("type", "array").set("items", p), nil
	}
	return p, nil
}

// required: the attributes whose requirement is required, but a
// profile's (required only where named without the profile).
func required(attrs map[string]attr) []string {
	var r []string
	for n, a := range attrs {
		if a["requirement"] == "required" && a["profile"] == nil {
			r = append(r, n)
		}
	}
	sort.Strings(r)
	return r
}

func (g *gen) properties(attrs map[string]attr) (*ordered, error) {
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	props := newOrdered()
	for _, n := range names {
		p, err := g.property(n, attrs[n])
		if err != nil {
			return nil, err
		}
		props.set(n, p)
	}
	return props, nil
}

func build(in string) ([]byte, error) {
	files, err := readTarGz(in)
	if err != nil {
		return nil, err
	}
	s := &source{files: files}
	var dict struct {
		Attributes map[string]attr `json:"attributes"`
		Types      struct {
			Attributes map[string]attr `json:"attributes"`
		} `json:"types"`
	}
	if err := json.Unmarshal(files["dictionary.json"], &dict); err != nil {
		return nil, fmt.Errorf("dictionary.json: %w", err)
	}
	s.dict, s.types = dict.Attributes, dict.Types.Attributes
	g := &gen{source: s, defs: map[string]any{}}

	attrs, err := s.class("events/system/process_activity.json")
	if err != nil {
		return nil, err
	}
	props, err := g.properties(attrs)
	if err != nil {
		return nil, err
	}
	// The class's identity: Process Activity (1007) of System Activity (1).
	activities := slices.Sorted(func(yield func(int) bool) {
		for _, v := range props.vals["activity_id"].(*ordered).vals["enum"].([]int) {
			if !yield(v) {
				return
			}
		}
	})
	var types []int
	for _, a := range activities {
		types = append(types, 100700+a)
	}
	props.set("class_uid", newOrdered().set("const", 1007))
	props.set("category_uid", newOrdered().set("const", 1))
	props.set("type_uid", newOrdered().set("type", "integer").set("enum", types))

	for len(g.pending) > 0 {
		name := g.pending[0]
		g.pending = g.pending[1:]
		it, oattrs, err := s.object(name)
		if err != nil {
			return nil, err
		}
		oprops, err := g.properties(oattrs)
		if err != nil {
			return nil, err
		}
		def := newOrdered().set("type", "object").set("properties", oprops).set("additionalProperties", false)
		if r := required(oattrs); len(r) > 0 {
			def.set("required", r)
		}
		if c := it.Constraints; c != nil {
			for _, k := range []struct {
				key   string
				names []string
			}{{"anyOf", c.AtLeastOne}, {"oneOf", c.JustOne}} {
				var alts []any
				for _, n := range k.names {
					alts = append(alts, newOrdered().set("required", []string{n}))
				}
				if len(alts) > 0 {
					def.set(k.key, alts)
				}
			}
		}
		g.defs[name] = def
	}
	defs := newOrdered()
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for n := range g.defs {
			if !yield(n) {
				return
			}
		}
	}) {
		defs.set(n, g.defs[n])
	}
	doc := newOrdered().
		set("$schema", "https://json-schema.org/draft/2020-12/schema").
		set("$id", "https://schema.ocsf.io/1.8.0/classes/process_activity").
		set("title", "Process Activity (OCSF 1.8.0, linux extension)").
		set("type", "object").
		set("properties", props).
		set("additionalProperties", false).
		set("required", required(attrs)).
		set("$defs", defs)
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, b, "", " "); err != nil {
		return nil, err
	}
	return pretty.Bytes(), nil
}
