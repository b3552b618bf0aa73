// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

var updateFields = flag.Bool("update-fields", false, "rewrite testdata/destfields.golden")

// fieldCorpus is every event the package's tests make (of each type, with
// hostile strings, throttles, unknown types), and the events the JSON
// fuzz corpus makes, each named.
func fieldCorpus(t *testing.T) (names []string, events []tracer.Event) {
	t.Helper()
	add := func(name string, e *tracer.Event) {
		var c tracer.Event
		copyEvent(&c, e)
		names, events = append(names, name), append(events, c)
	}
	for i, e := range testEvents() {
		add(fmt.Sprintf("journal/%d", i), &e)
	}
	for i, e := range otlpEvents() {
		add(fmt.Sprintf("otlp/%d", i), e)
	}
	dec := decodeEvents()
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range dec {
			if !yield(k) {
				return
			}
		}
	}) {
		e := dec[k]
		add("decode/"+k, &e)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	th := tracer.Event{Time: t0, Backend: "ebpf", Type: vocab.TypeThrottle, PID: 4242, Comm: "storm", Cgroup: "/pod",
		Throttle: tracer.Throttle{Source: tracer.SourceCgroup, CgroupID: 9, Start: t0, End: t0.Add(time.Second), Limit: 5,
			Exec: 1, Fork: 2, Signal: 3, Exit: 4}}
	add("throttle/cgroup", &th)
	th.Throttle.Source, th.Throttle.CgroupID, th.Throttle.Exec = tracer.SourceProcess, 0, math.MaxUint64-9
	add("throttle/process-huge", &th)
	for _, typ := range []vocab.Type{vocab.TypeNone, vocab.NumTypes, vocab.NumTypes + 3} {
		e := tracer.Event{Time: t0, Backend: "audit", Type: typ, PID: 1, Comm: "x\xfe"}
		add("type/"+strconv.Itoa(int(typ)), &e)
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzJSONSinkMatchesAppendJSON")
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		_, lit, _ := strings.Cut(strings.TrimSpace(string(raw)), "\n")
		data, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lit, "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", f.Name(), err)
		}
		i := 0
		eventsFromBytes([]byte(data), func(e *tracer.Event) {
			add(fmt.Sprintf("fuzz/%s/%d", f.Name(), i), e)
			i++
		})
	}
	return names, events
}

// renderValue prints an attribute value with its type, nested ones too.
func renderValue(b *strings.Builder, v attribute.Value) {
	b.WriteString(v.Type().String())
	switch v.Type() {
	case attribute.SLICE:
		b.WriteString("[")
		for i, x := range v.AsSlice() {
			if i > 0 {
				b.WriteString(" ")
			}
			renderValue(b, x)
		}
		b.WriteString("]")
	case attribute.MAP:
		b.WriteString("{")
		for i, kv := range v.AsMap() {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(b, "%s=", kv.Key)
			renderValue(b, kv.Value)
		}
		b.WriteString("}")
	case attribute.STRINGSLICE:
		fmt.Fprintf(b, "%q", v.AsStringSlice())
	case attribute.STRING:
		fmt.Fprintf(b, "%q", v.AsString())
	default:
		fmt.Fprintf(b, "(%s)", v.String())
	}
}

// renderFields is what the journal and OTLP make of each event: the
// journal's fields, each line quoted, then OTLP's attributes in order.
func renderFields(names []string, events []tracer.Event, journal func(*tracer.Event) []byte,
	otlp func(*tracer.Event) []attribute.KeyValue) string {
	var b strings.Builder
	for i := range events {
		fmt.Fprintf(&b, "== %s\n", names[i])
		for _, line := range bytes.SplitAfter(journal(&events[i]), []byte("\n")) {
			if len(line) > 0 {
				fmt.Fprintf(&b, "J %q\n", line)
			}
		}
		for _, kv := range otlp(&events[i]) {
			fmt.Fprintf(&b, "O %s ", kv.Key)
			renderValue(&b, kv.Value)
			b.WriteString("\n")
		}
	}
	// Exec ids begin with the boot id: the golden holds BOOTID.
	return strings.ReplaceAll(b.String(), host.BootID()+":", "BOOTID:")
}

// withHostname makes the node's name h for the test, so the golden does
// not depend on the machine.
func withHostname(t *testing.T, h string) {
	old := nodeHostname
	nodeHostname = func() string { return h }
	t.Cleanup(func() { nodeHostname = old })
}

func newJournalFields(e *tracer.Event) []byte { return appendJournalFields(nil, e, new(fieldValue)) }

func newOTLPAttributes(e *tracer.Event) []attribute.KeyValue {
	return appendOTLPAttributes(nil, e, new(fieldValue))
}

// TestFieldTableGolden: the journal's fields and the OTLP attributes the
// table makes for every event of the corpus are those of
// testdata/destfields.golden, which the journal's and OTLP's earlier
// encoders (the JSON line and the ECS document, read back) wrote; a
// change to a field shows there (-update-fields rewrites it).
func TestFieldTableGolden(t *testing.T) {
	withHostname(t, "node-\xff1")
	names, events := fieldCorpus(t)
	got := renderFields(names, events, newJournalFields, newOTLPAttributes)
	golden := filepath.Join("testdata", "destfields.golden")
	if *updateFields {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("line %d:\n got %s\nwant %s", i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%d lines, want %d", len(gl), len(wl))
	}
}

// TestFieldTableHasEveryKey: for every event of the corpus the journal
// has a field for each key of the JSON line, and OTLP an attribute for
// each of the ECS document, and no other: a field added to an encoder
// and not to the table fails here.
func TestFieldTableHasEveryKey(t *testing.T) {
	names, events := fieldCorpus(t)
	for i := range events {
		e := &events[i]
		want := journalFields(t, AppendJSON(nil, e))
		got := parseNative(t, newJournalFields(e))
		for k := range want {
			if _, ok := got[k]; !ok {
				t.Errorf("%s: no journal field %s (the JSON line has it)", names[i], k)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: journal field %s is not in the JSON line", names[i], k)
			}
		}
		wantAttrs := flatJSON(t, AppendECS(nil, e))
		gotAttrs := map[string]bool{}
		for _, kv := range newOTLPAttributes(e) {
			k := string(kv.Key)
			if gotAttrs[k] {
				t.Errorf("%s: attribute %s twice", names[i], k)
			}
			gotAttrs[k] = true
			if _, ok := wantAttrs[k]; !ok {
				t.Errorf("%s: attribute %s is not in the ECS document", names[i], k)
			}
		}
		for k := range wantAttrs {
			if !gotAttrs[k] {
				t.Errorf("%s: no attribute %s (the ECS document has it)", names[i], k)
			}
		}
	}
}
