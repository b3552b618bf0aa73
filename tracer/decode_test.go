// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"encoding/json"
	"testing"
)

// A JSON reader that is not the tracer's (encoding/json, jq) reads
// \udcXX as U+FFFD; the tracer's decoder takes what JSON allows besides:
// \/, \b, \f and surrogate pairs.
func TestJSONStringDecoder(t *testing.T) {
	cases := map[string]string{
		`"a\/b\b\f\n\r\t\"\\"`: "a/b\b\f\n\r\t\"\\",
		`"\ud83d\ude00"`:       "\U0001f600",
		`"\ud83d"`:             "\ufffd",
		`"\ud83dx"`:            "\ufffdx",
		`"\udc00\udc80"`:       "\ufffd\x80",
		`"\u00e9\udcc3\udca9"`: "\u00e9\xc3\xa9",
		`null`:                 "",
	}
	for in, want := range cases {
		var s jsonString
		if err := json.Unmarshal([]byte(in), &s); err != nil || string(s) != want {
			t.Errorf("%s read as %q, %v; want %q", in, s, err, want)
		}
	}
}
