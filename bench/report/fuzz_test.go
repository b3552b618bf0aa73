// SPDX-License-Identifier: Apache-2.0

package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/bench/result"
)

// FuzzReadResult: `tracer report` reads result files a fleet's nodes
// sent, whoever wrote them. A file either fails to read, with an error
// that names it, or renders: alone and beside another node's, as Markdown
// and as a self-contained HTML page. The corpus in testdata/fuzz/
// FuzzReadResult holds testdata's result files, whole and cut short.
func FuzzReadResult(f *testing.F) {
	f.Add([]byte(`{"schema": 1, "node": {}, "results": []}`))
	f.Add([]byte(`{"schema": 2, "node": {"hostname": "<script>x</script>"}, "results": [{"workload": "w", "mode": "none", "ratio_elapsed": 1}, {"workload": "w\"<b>", "mode": "ebpf", "ratio_elapsed": 1e308, "ratio_ci95": [-1, 0], "elapsed_s": -5}]}`))
	other, err := result.Read(filepath.Join("testdata", "web-86-12.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "node.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		file, err := result.Read(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for _, files := range [][]*result.File{{file}, {file, other}} {
			names := []string{path, "testdata/web-86-12.json"}[:len(files)]
			r, err := New(names, files)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			var md, page bytes.Buffer
			if err := WriteMarkdown(&md, r); err != nil || md.Len() == 0 {
				t.Fatalf("Markdown: %v", err)
			}
			if err := WriteHTML(&page, r); err != nil || page.Len() == 0 {
				t.Fatalf("HTML: %v", err)
			}
			checkSelfContained(t, page.String())
			if t.Failed() {
				t.FailNow()
			}
		}
	})
}
