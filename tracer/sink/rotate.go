// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Rotation says when an output file is rotated.
type Rotation struct {
	// MaxSize, when positive, is the most bytes FILE holds: before a
	// write would make it larger, FILE becomes FILE.1 (FILE.1 becomes
	// FILE.2, and so on) and writing goes on in a new FILE. Files end at
	// a line's end; only one line longer than MaxSize makes a file
	// larger, and has that file to itself.
	MaxSize int64
	// Keep is how many rotated files are kept, FILE.1 (the newest) to
	// FILE.Keep; at least 1 with MaxSize.
	Keep int
	// OnError, when set, is told from the writer when rotating fails (a
	// directory in the way of FILE.N), and with nil when it works again.
	// Meanwhile FILE takes no line past MaxSize: Write refuses them with
	// an error (the output queue counts their events lost), so that a
	// rotation that cannot be done never fills the disk; it is tried
	// again at most once a second.
	OnError func(error)
}

// rotateRetry is how long a failed rotation waits before the next try:
// each try costs a few system calls, and a write comes every few ms.
const rotateRetry = time.Second

// RotatingFile is --output FILE for a watch that runs for months. It is
// the io.WriteCloser an output queue writes to (NewJSONSink and
// the others), so rotating happens in the queue's writer goroutine and
// never makes the backend's reader wait. Write is given whole lines (the
// queue writes whole events, each one line), and splits them only at a
// line's end. Reopen, for SIGHUP, may be called from any goroutine.
//
// Every file is opened as CreateOutput opens one: created 0600,
// never through a symbolic link; rotated files are renamed by name in
// the directory opened once, so a link another user left at FILE.1 is
// replaced, never followed.
type RotatingFile struct {
	path string
	rot  Rotation

	mu      sync.Mutex
	dir     *OutputDir
	name    string
	f       *os.File
	size    int64 // what f holds: the next write's offset
	regular bool  // only a regular file rotates (not /dev/null)
	closed  bool
	failing bool      // the last rotation failed
	retryAt time.Time // when to try it again

	failures atomic.Uint64 // rotations that failed, read from any goroutine

	// dropping, in tests, is called with the path of a rotated file just
	// before it is removed for being one more than Keep.
	dropping func(path string)
}

// OpenRotatingFile opens path for writing events. It appends to an
// existing file: a restarted tracer (a service's Restart=, a package
// upgrade) continues its log, as auditd and rsyslog do, where emptying
// it would lose every event since the last rotation. Errors are
// CreateOutput's.
func OpenRotatingFile(path string, rot Rotation) (*RotatingFile, error) {
	if rot.MaxSize < 0 || (rot.MaxSize > 0 && rot.Keep < 1) {
		return nil, vocab.Usagef("rotating %s: need a positive size and at least one rotated file to keep", path)
	}
	dir, name, err := OpenOutputDir(path)
	if err != nil {
		return nil, err
	}
	if rot.MaxSize > 0 {
		if err := dir.private(path); err != nil {
			dir.Close()
			return nil, err
		}
	}
	f, err := dir.Append(name)
	if err != nil {
		dir.Close()
		return nil, err
	}
	r := &RotatingFile{path: path, rot: rot, dir: dir, name: name}
	if err := r.use(f); err != nil {
		f.Close()
		dir.Close()
		return nil, err
	}
	if rot.MaxSize > 0 && !r.regular {
		r.Close()
		return nil, vocab.Usagef("%s is not a regular file, which tracer does not rotate: drop --output-max-size or name a file", path)
	}
	return r, nil
}

// use makes f the file written to; r.mu is held, or r is new.
func (r *RotatingFile) use(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("looking at %s: %w", r.path, err)
	}
	if r.f != nil {
		_ = r.f.Close()
	}
	r.f, r.size, r.regular = f, fi.Size(), fi.Mode().IsRegular()
	if !r.regular {
		r.size = 0
	}
	return nil
}

// Write writes p, lines that end in '\n', rotating FILE at a line's end
// as Rotation says. n counts the bytes that reached a file; a failed
// write takes back the part of a line it left, so every file holds whole
// lines.
func (r *RotatingFile) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, fs.ErrClosed
	}
	done := 0
	for len(p) > 0 {
		n := len(p)
		if r.over(n) {
			n = fit(p, r.rot.MaxSize-r.size)
			if n == 0 {
				if r.size > 0 && r.rotate() {
					continue
				}
				if r.size > 0 {
					// Rotating failed: FILE stays within MaxSize, and
					// the caller counts what it could not take.
					return done, fmt.Errorf("%s is full (%d bytes) and rotating it fails: lines dropped until it works", r.path, r.rot.MaxSize)
				}
				n = lineLen(p) // a line longer than MaxSize: a file of its own
			}
		}
		k, err := r.write(p[:n])
		done += k
		if err != nil {
			return done, err
		}
		p = p[n:]
	}
	return done, nil
}

// over reports whether n more bytes would take FILE past MaxSize. At the
// limit the file's size is read again: logrotate's copytruncate may have
// emptied it.
func (r *RotatingFile) over(n int) bool {
	if r.rot.MaxSize <= 0 || !r.regular || r.size+int64(n) <= r.rot.MaxSize {
		return false
	}
	if fi, err := r.f.Stat(); err == nil && fi.Size() < r.size {
		r.size = fi.Size()
	}
	return r.size+int64(n) > r.rot.MaxSize
}

// fit is how many bytes of whole lines at p's start fit in room.
func fit(p []byte, room int64) int {
	if room <= 0 {
		return 0
	}
	if room >= int64(len(p)) {
		return len(p)
	}
	return bytes.LastIndexByte(p[:room], '\n') + 1
}

// lineLen is the length of p's first line, its '\n' included.
func lineLen(p []byte) int {
	if i := bytes.IndexByte(p, '\n'); i >= 0 {
		return i + 1
	}
	return len(p)
}

// write writes b to the current file; r.mu is held.
func (r *RotatingFile) write(b []byte) (int, error) {
	n, err := r.f.Write(b)
	if err != nil && n > 0 && r.regular {
		// A full disk may take part of a line: take it back, so that the
		// file goes on with whole lines once there is room.
		if whole := bytes.LastIndexByte(b[:n], '\n') + 1; whole < n {
			// O_APPEND: the next write goes to the new end.
			if r.f.Truncate(r.size+int64(whole)) == nil {
				n = whole
			}
		}
	}
	r.size += int64(n)
	return n, err
}

// rotate renames FILE.N-1 to FILE.N ... FILE to FILE.1, and opens a new
// FILE; r.mu is held. It reports whether it did.
func (r *RotatingFile) rotate() bool {
	if r.failing && time.Now().Before(r.retryAt) {
		return false
	}
	err := r.shift()
	if err == nil {
		var f *os.File
		if f, err = r.dir.Append(r.name); err == nil {
			if err = r.use(f); err != nil {
				f.Close()
			}
		}
	}
	if err != nil {
		err = fmt.Errorf("rotating %s: %w", r.path, err)
	}
	r.report(err)
	return err == nil
}

// shift makes room for FILE at FILE.1. When FILE is no longer the file
// being written (logrotate renamed it and SIGHUP has not come yet), it
// shifts nothing: the new FILE is opened instead.
func (r *RotatingFile) shift() error {
	if !r.dir.Holds(r.name, r.f) {
		return nil
	}
	// The files move up one as far as the first free name: one missing,
	// or another user's (a link, a file of theirs), which the rename onto
	// it replaces and which is never carried along. With none free, the
	// oldest goes.
	free := 0
	for i := 1; i <= r.rot.Keep; i++ {
		if !r.dir.Own(r.rotated(i)) {
			free = i
			break
		}
	}
	if free == 0 {
		free = r.rot.Keep
		last := r.rotated(free)
		if r.dropping != nil {
			r.dropping(filepath.Join(filepath.Dir(r.path), last))
		}
		if err := r.dir.Remove(last); err != nil {
			return err
		}
	}
	for i := free - 1; i >= 0; i-- {
		if err := r.dir.Rename(r.rotated(i), r.rotated(i+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// rotated is the name of rotated file i, FILE itself for 0.
func (r *RotatingFile) rotated(i int) string {
	if i == 0 {
		return r.name
	}
	return r.name + "." + strconv.Itoa(i)
}

// report tells OnError when rotating starts failing and when it works
// again; r.mu is held.
func (r *RotatingFile) report(err error) {
	if err == nil {
		if r.failing {
			r.failing = false
			if r.rot.OnError != nil {
				r.rot.OnError(nil)
			}
		}
		return
	}
	r.retryAt = time.Now().Add(rotateRetry)
	r.failures.Add(1)
	if !r.failing {
		r.failing = true
		if r.rot.OnError != nil {
			r.rot.OnError(err)
		}
	}
}

// Reopen closes FILE and opens it again by its path, creating it if it
// is gone, and appends to it: after logrotate renamed it, and sent
// SIGHUP. When FILE cannot be opened, writing goes on in the file open
// until then, and the error says why.
func (r *RotatingFile) Reopen() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	// The directory is looked up again too: logrotate may have made it anew.
	dir, name, err := OpenOutputDir(r.path)
	if err != nil {
		return fmt.Errorf("reopening %s: %w", r.path, err)
	}
	if r.rot.MaxSize > 0 {
		if err := dir.private(r.path); err != nil {
			dir.Close()
			return fmt.Errorf("reopening %s: %w", r.path, err)
		}
	}
	f, err := dir.Append(name)
	if err == nil {
		err = r.use(f)
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		dir.Close()
		return fmt.Errorf("reopening %s: %w", r.path, err)
	}
	_ = r.dir.Close()
	r.dir, r.name = dir, name
	return nil
}

// RotationsFailed is how many rotations failed: tries, at most one a
// second while rotating fails.
func (r *RotatingFile) RotationsFailed() uint64 { return r.failures.Load() }

// CheckRotationDir reports, as a usage error, a directory of path that
// OpenRotatingFile would refuse to rotate in (other users can write it),
// without creating anything: for checking flags before a watch starts.
// A directory it cannot open is left for OpenRotatingFile to report.
func CheckRotationDir(path string) error {
	dir, _, err := OpenOutputDir(path)
	if err != nil {
		return nil
	}
	defer dir.Close()
	return dir.private(path)
}

// Close closes the file; later writes fail with fs.ErrClosed.
func (r *RotatingFile) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	_ = r.dir.Close()
	return r.f.Close()
}

// ParseSize reads a size such as 100MB, 512KB, 1GiB or 1048576 (bytes),
// as coreutils reads them: KB, MB, GB and TB are powers of 1000; K, M, G
// and T, and KiB, MiB, GiB and TiB, powers of 1024. Case does not matter.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := sizeUnits[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("%q is not a size: give a whole number and a unit, e.g. 100MB, 512KB or 1GiB", s)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is too large a size", s)
	}
	return n * mult, nil
}

var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}
