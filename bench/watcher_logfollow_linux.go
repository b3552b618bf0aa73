// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
)

// logFollower reads an auditd log across rotations. A busy run can write
// more than max_log_file several times over (200,000 signals make about
// 200 MB of ENRICHED log), and auditd then renames the file and, past
// num_logs, deletes the oldest. The follower opens every new file as soon
// as it appears and keeps them all open, so nothing written during the run
// is lost to a rename or a delete; bench reads them in order afterwards.
// Checking for a new file is a stat every 10 ms: nothing the workload pays.
type logFollower struct {
	path string
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex
	files []*os.File
	ferr  error

	// reading
	cur     int
	r       *bufio.Reader
	partial []byte
	again   bool // the current file was read to its end once after a newer one appeared
}

// followLog starts following path, from its current end (fromEnd) or from
// its start.
func followLog(path string, fromEnd bool) (*logFollower, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening auditd log: %w", err)
	}
	if fromEnd {
		if _, err := f.Seek(0, io.SeekEnd); err != nil {
			f.Close()
			return nil, fmt.Errorf("reading auditd log: %w", err)
		}
	}
	l := &logFollower{path: path, stop: make(chan struct{}), done: make(chan struct{}), files: []*os.File{f}}
	l.r = bufio.NewReaderSize(f, 1<<20)
	go l.watch()
	return l, nil
}

func (l *logFollower) watch() {
	defer close(l.done)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.checkRotation()
		}
	}
}

// checkRotation opens path when it is no longer the last file opened, and
// first any file rotated past between two checks: on a fast node auditd
// can rotate twice within one tick, and the file in between, path.1 by
// then, would be missed (a megabyte of events).
func (l *logFollower) checkRotation() {
	st, err := os.Stat(l.path)
	if err != nil {
		return // between the rename and the new file
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	last, err := l.files[len(l.files)-1].Stat()
	if err != nil || os.SameFile(st, last) {
		return
	}
	// path.1 is the newest rotated file, path.2 the one before it...: the
	// ones newer than the last opened come before it in that order.
	var missed []string
	for i := 1; ; i++ {
		name := l.path + "." + strconv.Itoa(i)
		fi, err := os.Stat(name)
		if err != nil || os.SameFile(fi, last) {
			break // past the oldest kept, or at the last opened
		}
		missed = append(missed, name)
	}
	for i := len(missed) - 1; i >= 0; i-- {
		l.open(missed[i])
	}
	l.open(l.path)
}

// open appends the file at name unless it is open already (a rotation
// while checkRotation looked can show it under two names). l.mu is held.
func (l *logFollower) open(name string) {
	f, err := os.Open(name)
	if err != nil {
		l.ferr = fmt.Errorf("opening rotated auditd log: %w", err)
		return
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return
	}
	for _, o := range l.files {
		if ost, err := o.Stat(); err == nil && os.SameFile(st, ost) {
			f.Close()
			return
		}
	}
	l.files = append(l.files, f)
}

// next returns the next complete line, or false when none is written yet.
// A line still being written stays for the next call.
func (l *logFollower) next() ([]byte, bool) {
	for {
		chunk, err := l.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			l.partial = append(l.partial, chunk...)
			continue
		}
		if err == nil {
			if len(l.partial) > 0 {
				line := append(l.partial, chunk...)
				l.partial = nil
				return line, true
			}
			return chunk, true
		}
		l.partial = append(l.partial, chunk...)
		// At the end of the current file: move on only once a newer file
		// exists and this one was read to its end after that was seen, so
		// that what auditd wrote just before rotating is not skipped.
		l.checkRotation()
		l.mu.Lock()
		newer := l.cur < len(l.files)-1
		var f *os.File
		if newer && l.again {
			l.cur++
			f = l.files[l.cur]
		}
		l.mu.Unlock()
		switch {
		case !newer:
			return nil, false
		case f == nil:
			l.again = true
			continue
		}
		l.again = false
		l.partial = nil // a file ends with a complete line
		l.r.Reset(f)
	}
}

func (l *logFollower) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ferr
}

func (l *logFollower) close() {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.files {
		f.Close()
	}
	l.files = nil
}
