// SPDX-License-Identifier: Apache-2.0

package bpfbackend

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// cEnum reads enum name's constants from bpf/headers/types.h, in order,
// with their values (C's rule: one more than the one before unless given).
func cEnum(t *testing.T, name string) (names []string, values []int) {
	t.Helper()
	src, err := os.ReadFile("../../bpf/headers/types.h")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)enum ` + name + ` \{(.*?)\};`).FindSubmatch(src)
	if m == nil {
		t.Fatalf("no enum %s in types.h", name)
	}
	body := regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(string(m[1]), "")
	next := 0
	for _, item := range strings.Split(body, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		n, v, given := strings.Cut(item, "=")
		if given {
			x, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("enum %s: %q: %v", name, item, err)
			}
			next = x
		}
		names = append(names, strings.TrimSpace(n))
		values = append(values, next)
		next++
	}
	return names, values
}

// The event types are described once, in the vocabulary: the C header's
// enum event_type must number them as tracer/vocab does (a record's type
// byte is decoded as a vocab.Type), and enum syscall_id must be what
// syscallNames names, in its order.
func TestEventTypesMatchTheCHeader(t *testing.T) {
	names, values := cEnum(t, "event_type")
	seen := map[vocab.Type]bool{}
	for i, n := range names {
		if n == "EV_MAX" {
			if want := len(vocab.AllTypes) + 1; values[i] != want {
				t.Errorf("EV_MAX = %d, want one past the last process event type (%d)", values[i], want)
			}
			continue
		}
		typ := vocab.TypeNamed(strings.ToLower(strings.TrimPrefix(n, "EV_")))
		if typ == vocab.TypeNone {
			t.Errorf("types.h's %s names no vocab type", n)
			continue
		}
		if int(typ) != values[i] {
			t.Errorf("types.h's %s = %d, vocab.%v = %d", n, values[i], typ, int(typ))
		}
		seen[typ] = true
	}
	for _, typ := range append(vocab.AllTypes[:len(vocab.AllTypes):len(vocab.AllTypes)], vocab.TypeThrottle) {
		if !seen[typ] {
			t.Errorf("vocab type %v has no EV_ value in types.h", typ)
		}
	}

	names, values = cEnum(t, "syscall_id")
	if len(names) != len(syscallNames) {
		t.Fatalf("enum syscall_id has %d values, syscallNames %d", len(names), len(syscallNames))
	}
	for i, n := range names {
		want := strings.ToLower(strings.TrimPrefix(n, "SC_"))
		if n == "SC_NONE" {
			want = ""
		}
		if values[i] != i || syscallNames[i] != want {
			t.Errorf("enum syscall_id %s = %d, syscallNames[%d] = %q", n, values[i], i, syscallNames[i])
		}
	}
}
