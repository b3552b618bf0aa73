// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

func TestCreateOutputNewFileIs0600(t *testing.T) {
	old := syscall.Umask(0) // the mode must not depend on a lax umask
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "out.json")
	f, err := CreateOutput(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestCreateOutputRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious")
	if err := os.WriteFile(target, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "out.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "nonexistent"), dangling); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, dangling} {
		for name, try := range map[string]func(string) error{
			"CreateOutput": func(p string) error {
				f, err := CreateOutput(p)
				if err == nil {
					f.Close()
				}
				return err
			},
			"CheckOutput": CheckOutput,
		} {
			err := try(p)
			if !errors.Is(err, vocab.ErrUsage) || !strings.Contains(err.Error(), "symbolic link") {
				t.Errorf("%s(%s) = %v, want a usage error about the symbolic link", name, p, err)
			}
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me" {
		t.Errorf("the link's target was changed: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(dir, "nonexistent")); !os.IsNotExist(err) {
		t.Errorf("the dangling link's target was created (%v)", err)
	}
}

func TestCreateOutputTruncatesRegularFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.json")
	if err := os.WriteFile(path, []byte("old content, longer than the new"), 0o640); err != nil {
		t.Fatal(err)
	}
	f, err := CreateOutput(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("new"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("content %q, want %q", b, "new")
	}
	if err := CheckOutput(path); err != nil {
		t.Errorf("CheckOutput of a regular file: %v", err)
	}
}

func TestCheckOutputDirectories(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{dir, filepath.Join(dir, "missing", "out.json")} {
		if err := CheckOutput(p); !errors.Is(err, vocab.ErrUsage) {
			t.Errorf("CheckOutput(%s) = %v, want a usage error", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Error("CheckOutput created something")
	}
}
