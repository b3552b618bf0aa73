// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os/exec"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// strictJSON fails t unless doc is what the strictest parsers take: valid
// JSON, valid UTF-8, and no \uXXXX surrogate escape outside a high-low
// pair (Go's encoding/json takes a lone one; serde_json does not).
func strictJSON(t testing.TB, what string, doc []byte) {
	t.Helper()
	if !json.Valid(doc) || !utf8.Valid(doc) {
		t.Fatalf("%s: invalid JSON or UTF-8: %q", what, doc)
	}
	inString := false
	for i := 0; i < len(doc); i++ {
		c := doc[i]
		if c == '"' {
			inString = !inString
			continue
		}
		if !inString || c != '\\' {
			continue
		}
		i++
		if doc[i] != 'u' {
			continue
		}
		v, _ := strconv.ParseUint(string(doc[i+1:i+5]), 16, 16)
		i += 4
		switch {
		case v >= 0xd800 && v <= 0xdbff:
			var lo uint64
			if i+6 < len(doc) && doc[i+1] == '\\' && doc[i+2] == 'u' {
				lo, _ = strconv.ParseUint(string(doc[i+3:i+7]), 16, 16)
			}
			if lo < 0xdc00 || lo > 0xdfff {
				t.Fatalf("%s: lone high surrogate \\u%04x in %q", what, v, doc)
			}
			i += 6
		case v >= 0xdc00 && v <= 0xdfff:
			t.Fatalf("%s: lone low surrogate \\u%04x in %q", what, v, doc)
		}
	}
}

// An argv with a byte that is not UTF-8: the ECS and OCSF documents are
// taken by strict parsers (U+FFFD in place of the byte) and carry the raw
// bytes under raw_base64; tracer's own JSON line keeps its lossless
// \udcXX.
func TestECSOCSFStrictUTF8(t *testing.T) {
	e := &tracer.Event{Type: vocab.TypeExec, Backend: "ebpf", PID: 42, Comm: "sh\xfe", Filename: "/usr/bin/printf",
		Argv: []string{"printf", "a\xffb", "ok"}, Ancestors: []tracer.Ancestor{{PID: 1, Comm: "init"}, {PID: 2, Comm: "\xc3"}}}
	for _, f := range []struct {
		name     string
		enc      func([]byte, *tracer.Event) []byte
		raw      func(doc map[string]any) any
		argvPath func(doc map[string]any) any
	}{
		{"ecs", AppendECS, func(d map[string]any) any { return d["tracer"].(map[string]any)["raw_base64"] },
			func(d map[string]any) any { return d["process"].(map[string]any)["args"] }},
		{"ocsf", AppendOCSF, func(d map[string]any) any { return d["unmapped"].(map[string]any)["raw_base64"] },
			func(d map[string]any) any { return d["unmapped"].(map[string]any)["argv"] }},
	} {
		doc := f.enc(nil, e)
		strictJSON(t, f.name, doc)
		pythonStrict(t, f.name, doc)
		var m map[string]any
		if err := json.Unmarshal(doc, &m); err != nil {
			t.Fatal(err)
		}
		if got := f.argvPath(m).([]any)[1]; got != "a\ufffdb" {
			t.Errorf("%s: argv[1] = %q, want a U+FFFD b", f.name, got)
		}
		raw, ok := f.raw(m).(map[string]any)
		if !ok {
			t.Fatalf("%s: no raw_base64 in %s", f.name, doc)
		}
		argv, _ := raw["argv"].([]any)
		if len(argv) != len(e.Argv) {
			t.Fatalf("%s: raw_base64.argv %v", f.name, raw["argv"])
		}
		for i, a := range argv {
			if b, err := base64.StdEncoding.DecodeString(a.(string)); err != nil || string(b) != e.Argv[i] {
				t.Errorf("%s: raw argv[%d] %q decodes to %q, %v", f.name, i, a, b, err)
			}
		}
		if b, _ := base64.StdEncoding.DecodeString(raw["comm"].(string)); string(b) != e.Comm {
			t.Errorf("%s: raw comm %q", f.name, b)
		}
		if anc, _ := raw["ancestors"].([]any); len(anc) != 2 {
			t.Errorf("%s: raw ancestors %v", f.name, raw["ancestors"])
		}
		if _, ok := raw["filename"]; ok {
			t.Errorf("%s: a UTF-8 field in raw_base64: %s", f.name, doc)
		}
	}
	// All UTF-8: no raw_base64.
	ok := &tracer.Event{Type: vocab.TypeExec, Backend: "ebpf", Comm: "sh", Filename: "/bin/true", Argv: []string{"true", "é"}}
	for _, doc := range [][]byte{AppendECS(nil, ok), AppendOCSF(nil, ok)} {
		if bytes.Contains(doc, []byte("raw_base64")) {
			t.Errorf("raw_base64 without a reason: %s", doc)
		}
	}
	// tracer's own JSON stays lossless.
	if line := AppendJSON(nil, e); !bytes.Contains(line, []byte(`"a\udcffb"`)) {
		t.Errorf("JSON line %s: want argv[1] as a\\udcffb", line)
	}
}

// pythonStrict has Python's json read doc and encode every string it
// holds as UTF-8, which a lone surrogate fails; skipped without python3.
func pythonStrict(t *testing.T, what string, doc []byte) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		return
	}
	cmd := exec.Command(py, "-c", `import json,sys; json.dumps(json.loads(sys.stdin.buffer.read()), ensure_ascii=False).encode("utf-8")`)
	cmd.Stdin = bytes.NewReader(doc)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: python3 refuses %q: %v %s", what, doc, err, out)
	}
}
