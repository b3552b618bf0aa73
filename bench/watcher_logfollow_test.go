// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// auditd rotates its log as a busy run writes it (renames audit.log to
// audit.log.1, and past num_logs deletes the oldest): the follower reads
// every line written after it started, across rotations and deletions, and
// nothing from before.
func TestLogFollowerRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	write := func(f *os.File, from, to int) {
		for i := from; i < to; i++ {
			fmt.Fprintf(f, "line %d\n", i)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	write(f, 0, 10) // before the run
	l, err := followLog(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	n := 10
	for gen := 0; gen < 4; gen++ {
		write(f, n, n+100)
		n += 100
		// Half a line, then rotation: as auditd does, the old file ends
		// complete before the rename.
		fmt.Fprintf(f, "line %d", n)
		fmt.Fprintf(f, " tail\n")
		n++
		f.Close()
		if err := os.Rename(path, path+".1"); err != nil {
			t.Fatal(err)
		}
		if gen == 2 {
			// num_logs reached: the oldest goes. The follower holds it open.
			_ = os.Remove(path + ".1")
		}
		if f, err = os.Create(path); err != nil {
			t.Fatal(err)
		}
		l.checkRotation() // the ticker's job, without waiting for it
	}
	write(f, n, n+5)
	n += 5
	f.Close()
	got := 0
	deadline := time.Now().Add(5 * time.Second)
	for got < n-10 && time.Now().Before(deadline) {
		line, ok := l.next()
		if !ok {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		want := fmt.Sprintf("line %d", 10+got)
		if s := string(line); s != want+"\n" && s != want+" tail\n" {
			t.Fatalf("line %d: %q, want %q", got, s, want)
		}
		got++
	}
	if got != n-10 {
		t.Errorf("read %d lines, want %d", got, n-10)
	}
	if line, ok := l.next(); ok {
		t.Errorf("a line past the end: %q", line)
	}
}

// auditd can rotate twice between two checks on a fast node (a 1 MB
// max_log_file fills in a few milliseconds): the file in between, by then
// audit.log.1, is read too, in order.
func TestLogFollowerTwoRotationsInOneTick(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := followLog(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	// Stop the ticker so that the rotations below happen between checks.
	close(l.stop)
	<-l.done
	l.stop = make(chan struct{}) // for close, which finds done closed
	n := 0
	rotate := func() {
		for i := 0; i < 50; i++ {
			fmt.Fprintf(f, "line %d\n", n)
			n++
		}
		f.Close()
		// As auditd's ROTATE does: audit.log.N -> N+1, audit.log -> .1.
		for i := 2; i >= 1; i-- {
			_ = os.Rename(fmt.Sprintf("%s.%d", path, i), fmt.Sprintf("%s.%d", path, i+1))
		}
		if err := os.Rename(path, path+".1"); err != nil {
			t.Fatal(err)
		}
		if f, err = os.Create(path); err != nil {
			t.Fatal(err)
		}
	}
	rotate()
	rotate()
	l.checkRotation()
	rotate()
	l.checkRotation()
	fmt.Fprintf(f, "line %d\n", n)
	n++
	f.Close()
	for got := 0; got < n; got++ {
		line, ok := l.next()
		if !ok {
			t.Fatalf("read %d of %d lines", got, n)
		}
		if want := fmt.Sprintf("line %d\n", got); string(line) != want {
			t.Fatalf("line %d: %q, want %q", got, line, want)
		}
	}
}
