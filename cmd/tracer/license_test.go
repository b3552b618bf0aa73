// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// spdxHeader is the first line of every Go file of the repository but
// generated ones, which are what their generator writes (make
// check-generated compares them byte for byte).
const spdxHeader = "// SPDX-License-Identifier: Apache-2.0"

// generated is the line the Go convention marks generated files with.
var generated = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

func TestGoFilesCarryTheLicense(t *testing.T) {
	out, err := exec.Command("git", "-C", "../..", "ls-files", "--cached", "--others", "--exclude-standard", "*.go").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	files := strings.Fields(string(out))
	if len(files) < 100 {
		t.Fatalf("git ls-files listed %d Go files, want the repository's", len(files))
	}
	var missing []string
	for _, f := range files {
		first, isGenerated, err := headerOf(filepath.Join("../..", f))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		if !isGenerated && first != spdxHeader {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d Go files do not start with %q:\n%s", len(missing), spdxHeader, strings.Join(missing, "\n"))
	}
	if _, err := os.Stat("../../LICENSE"); err != nil {
		t.Errorf("no LICENSE at the repository's root: %v", err)
	}
}

// headerOf returns a Go file's first line and whether a generator's
// marker comes before its package clause.
func headerOf(path string) (first string, isGenerated bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for n := 0; s.Scan(); n++ {
		l := s.Text()
		if n == 0 {
			first = l
		}
		if generated.MatchString(l) {
			return first, true, nil
		}
		if strings.HasPrefix(l, "package ") {
			break
		}
	}
	return first, false, s.Err()
}
