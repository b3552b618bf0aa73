// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"errors"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Each --output value reaches its destination, from the registry alone:
// a file takes what no other does, a scheme none takes is refused.
func TestDestinationRegistry(t *testing.T) {
	for _, c := range []struct {
		output  string
		cfg     DestinationConfig
		rotates bool
		err     string
	}{
		{output: "", cfg: DestinationConfig{Format: "text"}},
		{output: "-", cfg: DestinationConfig{Format: "json"}},
		{output: "/tmp/x.jsonl", cfg: DestinationConfig{Format: "json"}, rotates: true},
		{output: "journal"},
		{output: "journal:/run/x"},
		{output: "journal:x", err: "journal:/SOCKET"},
		{output: "journal", cfg: DestinationConfig{Format: "ecs", FormatGiven: true}, err: "drop --format ecs"},
		{output: "syslog"},
		{output: "syslog+tls://h:6514"},
		{output: "syslog://h:514", err: "--allow-cleartext"},
		{output: "syslog://h:514", cfg: DestinationConfig{AllowCleartext: true}},
		{output: "syslog", cfg: DestinationConfig{AllowCleartext: true}, err: "drop it"},
		{output: "otlps://h:4318"},
		{output: "otlp:/run/otel.sock"},
		{output: "otlp://h:4318", err: "--allow-cleartext"},
		{output: "otlpx://h:4318", err: "otlp or otlps"},
		{output: "otlp://h:4318", cfg: DestinationConfig{CAFile: "/etc/hostname"}, err: "--output-ca-file is for"},
		{output: "kafka://h:9092", err: "unknown destination"},
		{output: "x.jsonl", cfg: DestinationConfig{Format: "xml"}, err: "unknown format"},
	} {
		out, err := PrepareOutput(c.output, c.cfg)
		if c.err != "" {
			if err == nil || !errors.Is(err, vocab.ErrUsage) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q %+v: error %v, want a usage error saying %q", c.output, c.cfg, err, c.err)
			}
			continue
		}
		if err != nil || out.Open == nil || out.Rotates != c.rotates {
			t.Errorf("%q %+v: %+v, %v", c.output, c.cfg, out, err)
		}
	}
	forms, cleartext := DestinationForms()
	if len(forms) < 4 || len(cleartext) < 3 || len(DestinationCompletions()) < 5 {
		t.Errorf("forms %q, cleartext %q, completions %q", forms, cleartext, DestinationCompletions())
	}
}
