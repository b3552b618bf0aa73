// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// kernelTests is the Makefile's KERNEL_TESTS, as make exports it.
func kernelTests(t *testing.T) string {
	t.Helper()
	mk, err := os.ReadFile("../../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(mk), "\ndefine KERNEL_TESTS\n")
	body, _, ok2 := strings.Cut(rest, "\nendef\n")
	if !ok || !ok2 {
		t.Fatal("no define KERNEL_TESTS ... endef in the Makefile")
	}
	return strings.ReplaceAll(body, "$$", "$")
}

// Every test KERNEL_TESTS names exists: go test runs what a pattern
// matches and says nothing of an alternative that matches nothing, so a
// misspelt name would silently not run in the guests.
func TestKernelTestsExist(t *testing.T) {
	runs, err := parseRuns(kernelTests(t))
	if err != nil {
		t.Fatal(err)
	}
	alternatives := regexp.MustCompile(`^\^\(([A-Za-z0-9_|]+)\)\$$`)
	for _, r := range runs {
		dir := filepath.Join("../../..", r.Package)
		files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		tests := map[string]bool{}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`).FindAllStringSubmatch(string(b), -1) {
				tests[m[1]] = true
			}
		}
		top, _, _ := strings.Cut(r.Pattern, "/")
		re, err := regexp.Compile(top)
		if err != nil {
			t.Errorf("%s: pattern %q: %v", r.Package, r.Pattern, err)
			continue
		}
		matched := 0
		for name := range tests {
			if re.MatchString(name) {
				matched++
			}
		}
		if matched == 0 {
			t.Errorf("%s: %q matches none of its tests", r.Package, r.Pattern)
		}
		if m := alternatives.FindStringSubmatch(top); m != nil {
			for _, name := range strings.Split(m[1], "|") {
				if !tests[name] {
					t.Errorf("%s: %s is in KERNEL_TESTS but not a test of the package", r.Package, name)
				}
			}
		}
	}
}
