// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// A full disk under --output does not end watch: the events it cannot
// write are counted lost at stage output, writing resumes on a whole line
// once there is room again, and --stats-file is written at the end.
func TestWatchOutputDiskFull(t *testing.T) {
	tracertest.NeedRoot(t)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tracer-test-full", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	out, stats := filepath.Join(dir, "events.json"), filepath.Join(dir, "stats.json")
	cmd := exec.Command(tracerBin, "watch", "--backend", "ebpf", "--events", "exec", "--format", "json",
		"--output", out, "--stats-file", stats)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	defer func() {
		_ = cmd.Process.Kill()
	}()
	var said []string
	waitFor := func(what string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("watch exited before it said %q: %q", what, said)
				}
				said = append(said, l)
				if strings.Contains(l, what) {
					return
				}
			case <-deadline:
				t.Fatalf("watch did not say %q within 30s: %q", what, said)
			}
		}
	}
	waitFor("watching")

	made := 0 // execs of this test's own; the watch sees the node's too
	execs := func(marker string, n int) {
		for range n {
			if exec.Command("/bin/true", marker).Run() == nil {
				made++
			}
		}
	}
	// Fill the disk, then make events that cannot be written.
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	block := bytes.Repeat([]byte("x"), 64<<10)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	// A 256 KiB chunk of events or more per attempt: enough to be refused.
	execs("tracer-disk-full-lost", 1500)
	waitFor("fails")
	time.Sleep(time.Second)
	select {
	case err := <-exited:
		t.Fatalf("watch ended on a full disk (%v): %q", err, said)
	default:
	}

	// Room again: the events that come now are written.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	execs("tracer-disk-full-resumed", 20)
	waitFor("again")
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(out)
		if bytes.Contains(b, []byte("tracer-disk-full-resumed")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the events after the disk had room again were not written: %d bytes, stderr %q", len(b), said)
		}
		execs("tracer-disk-full-resumed", 5)
		time.Sleep(200 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	for l := range lines {
		said = append(said, l)
	}
	if err := <-exited; err != nil {
		t.Errorf("watch: %v: %q", err, said)
	}

	// Every line written is whole: a write the disk cut short was taken back.
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	written := 0
	for n := 1; ; n++ {
		var v map[string]any
		if err := dec.Decode(&v); err == io.EOF {
			written = n - 1
			break
		} else if err != nil {
			t.Fatalf("line %d of the output is not whole JSON: %v", n, err)
		}
	}
	var sf tracer.StatsFile
	sb, err := os.ReadFile(stats)
	if err != nil {
		t.Fatalf("--stats-file not written: %v", err)
	}
	if err := json.Unmarshal(sb, &sf); err != nil {
		t.Fatal(err)
	}
	if sf.Lost["output"] == 0 {
		t.Errorf("nothing counted lost at stage output: %s", sb)
	}
	// Every event that reached the output is in the file or counted lost
	// there, none twice; and the watch saw at least the execs made here.
	if got := uint64(written) + sf.Lost["output"]; got != sf.EventsSeen {
		t.Errorf("%d lines written + %d lost at stage output = %d, want the %d events seen", written, sf.Lost["output"], got, sf.EventsSeen)
	}
	if sf.EventsSeen < uint64(made) {
		t.Errorf("events seen %d < %d execs made", sf.EventsSeen, made)
	}
	t.Logf("made %d execs; events seen %d = %d written + %d lost at stage output (%d bytes)", made, sf.EventsSeen, written, sf.Lost["output"], len(b))
}
