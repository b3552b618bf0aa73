// SPDX-License-Identifier: Apache-2.0

package tracertest

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// DemoFlags is the DEMO_FLAGS of the Makefile at path, its $(DEMO_...)
// variables expanded, and the DEMO_ variables themselves: what make demo
// gives tracer bench, for the tests that check the docs say it and that it
// measures what it claims.
func DemoFlags(t testing.TB, path string) (string, map[string]string) {
	t.Helper()
	mk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, l := range strings.Split(string(mk), "\n") {
		if k, v, ok := strings.Cut(l, " := "); ok && strings.HasPrefix(k, "DEMO_") {
			vars[k] = v
		}
	}
	flags := regexp.MustCompile(`\$\((DEMO_[A-Z]+)\)`).ReplaceAllStringFunc(vars["DEMO_FLAGS"], func(m string) string { return vars[m[2:len(m)-1]] })
	if flags == "" || strings.Contains(flags, "$(") {
		t.Fatalf("%s: DEMO_FLAGS not found or not expanded: %q", path, flags)
	}
	return flags, vars
}
