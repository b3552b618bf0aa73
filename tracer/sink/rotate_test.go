// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/tracertest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

func TestParseSize(t *testing.T) {
	good := map[string]int64{
		"100MB": 100e6, "10MB": 10e6, "512KB": 512e3, "1GB": 1e9, "4096": 4096, "7b": 7,
		"1K": 1024, "2M": 2 << 20, "1G": 1 << 30, "3KiB": 3 << 10, "5MiB": 5 << 20, "1gib": 1 << 30,
		"10mb": 10e6, " 64 MB ": 64e6, "1TB": 1e12, "1TiB": 1 << 40,
	}
	for s, want := range good {
		if got, err := ParseSize(s); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "MB", "-1MB", "1.5MB", "10 megabytes", "10XB", "0x10", "99999999999999999999", "9999999999TB", "1e6"} {
		if got, err := ParseSize(s); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", s, got)
		}
	}
}

// lines makes n lines of about size bytes each, numbered from first.
func lines(first, n, size int) []byte {
	var b bytes.Buffer
	for i := first; i < first+n; i++ {
		s := fmt.Sprintf("line %d ", i)
		b.WriteString(s + strings.Repeat("x", max(size-len(s)-1, 0)) + "\n")
	}
	return b.Bytes()
}

// readSet reads FILE and its rotated files, oldest first, and checks
// every one: mode 0600, a regular file, at most limit bytes unless it is
// one line, whole lines.
func readSet(t *testing.T, path string, keep int, limit int64) []byte {
	t.Helper()
	var all []byte
	for i := keep + 1; i >= 0; i-- {
		name := path
		if i > 0 {
			name = path + "." + strconv.Itoa(i)
		}
		fi, err := os.Lstat(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if i > keep {
			t.Errorf("%s exists: only %d rotated files are kept", filepath.Base(name), keep)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want a regular file 0600", filepath.Base(name), fi.Mode())
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			t.Errorf("%s ends within a line", filepath.Base(name))
		}
		if int64(len(b)) > limit && bytes.Count(b, []byte("\n")) > 1 {
			t.Errorf("%s holds %d bytes in %d lines, past the limit of %d", filepath.Base(name), len(b), bytes.Count(b, []byte("\n")), limit)
		}
		all = append(all, b...)
	}
	return all
}

// Chunks cut at line ends: every file holds whole lines up to the limit,
// the files read oldest first are what was written, and a line longer
// than the limit has a file of its own.
func TestRotateSplitsChunksAtLineEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	const limit = 1000
	r, err := OpenRotatingFile(path, Rotation{MaxSize: limit, Keep: 20})
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	write := func(b []byte) {
		t.Helper()
		if n, err := r.Write(b); n != len(b) || err != nil {
			t.Fatalf("Write(%d bytes) = %d, %v", len(b), n, err)
		}
		want = append(want, b...)
	}
	write(lines(0, 30, 70))  // a chunk of 2,100 bytes: three files
	write(lines(30, 1, 999)) // one line short of the limit: a new file
	write(lines(31, 1, 2500))
	write(lines(32, 5, 90))
	write(lines(37, 11, 90)) // 990 bytes: 6 lines fill the file after 450 bytes, 5 start a new one
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	got := readSet(t, path, 20, limit)
	if !bytes.Equal(got, want) {
		t.Errorf("the files hold %d bytes, not the %d written in order", len(got), len(want))
	}
	b, _ := os.ReadFile(path)
	if string(b) != string(lines(43, 5, 90)) {
		t.Errorf("FILE holds %q, want the last chunk's last 5 lines", b)
	}
	if _, err := r.Write([]byte("late\n")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Write after Close: %v, want os.ErrClosed", err)
	}
}

// Only Keep rotated files stay: the oldest goes.
func TestRotateKeepsN(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	r, err := OpenRotatingFile(path, Rotation{MaxSize: 100, Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	var dropped []string
	r.dropping = func(p string) {
		b, _ := os.ReadFile(p)
		dropped = append(dropped, string(b))
	}
	for i := range 6 {
		if _, err := r.Write(lines(i, 1, 100)); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	got := readSet(t, path, 2, 100)
	if want := lines(3, 3, 100); !bytes.Equal(got, want) {
		t.Errorf("kept %q, want %q", got, want)
	}
	if want := []string{string(lines(0, 1, 100)), string(lines(1, 1, 100)), string(lines(2, 1, 100))}; fmt.Sprint(dropped) != fmt.Sprint(want) {
		t.Errorf("dropped %q, want %q", dropped, want)
	}
}

// A rotated file removed by hand (FILE.2 of 3) leaves a gap: the next
// rotation moves the files up to it and removes none.
func TestRotateFillsGap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	for name, body := range map[string]string{path: "new\n", path + ".1": "old\n", path + ".3": "oldest\n"} {
		if err := os.WriteFile(name, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r, err := OpenRotatingFile(path, Rotation{MaxSize: 4096, Keep: 3})
	if err != nil {
		t.Fatal(err)
	}
	r.dropping = func(p string) { t.Errorf("%s removed although FILE.2 was free", p) }
	if _, err := r.Write(lines(0, 1, 4096)); err != nil {
		t.Fatal(err)
	}
	r.Close()
	for name, want := range map[string]string{path: string(lines(0, 1, 4096)), path + ".1": "new\n", path + ".2": "old\n", path + ".3": "oldest\n"} {
		if b, _ := os.ReadFile(name); string(b) != want {
			t.Errorf("%s holds %q, want %q", filepath.Base(name), rotHead(b), rotHead([]byte(want)))
		}
	}
}

func rotHead(b []byte) []byte { return b[:min(len(b), 20)] }

// A restarted tracer continues FILE, with or without a size limit: the
// service's log since the last rotation survives a restart.
func TestOpenAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, []byte("before\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRotatingFile(path, Rotation{MaxSize: 1 << 20, Keep: 1})
	if err != nil {
		t.Fatal(err)
	}
	r.Write([]byte("after\n"))
	r.Close()
	if b, _ := os.ReadFile(path); string(b) != "before\nafter\n" {
		t.Errorf("with --output-max-size: %q, want the old lines kept", b)
	}
	r, err = OpenRotatingFile(path, Rotation{})
	if err != nil {
		t.Fatal(err)
	}
	r.Write([]byte("new\n"))
	r.Close()
	if b, _ := os.ReadFile(path); string(b) != "before\nafter\nnew\n" {
		t.Errorf("without --output-max-size: %q, want the old lines kept", b)
	}
	// /dev/null is no file to rotate.
	if _, err := OpenRotatingFile("/dev/null", Rotation{MaxSize: 1 << 20, Keep: 1}); !errors.Is(err, vocab.ErrUsage) {
		t.Errorf("rotating /dev/null: %v, want a usage error", err)
	}
}

// logrotate without copytruncate: FILE renamed, then SIGHUP. Reopen
// makes a new FILE (0600); the renamed file keeps what was written before.
func TestReopenAfterRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	r, err := OpenRotatingFile(path, Rotation{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Write([]byte("one\n"))
	if err := os.Rename(path, path+"-20261201"); err != nil {
		t.Fatal(err)
	}
	r.Write([]byte("two\n")) // before SIGHUP: still the renamed file
	if err := r.Reopen(); err != nil {
		t.Fatal(err)
	}
	r.Write([]byte("three\n"))
	if b, _ := os.ReadFile(path + "-20261201"); string(b) != "one\ntwo\n" {
		t.Errorf("renamed file: %q", b)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatalf("FILE not made again: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "three\n" || fi.Mode().Perm() != 0o600 {
		t.Errorf("new FILE: %q, mode %v; want three, 0600", b, fi.Mode().Perm())
	}
	// A Reopen with FILE still there appends to it: a SIGHUP alone loses nothing.
	if err := r.Reopen(); err != nil {
		t.Fatal(err)
	}
	r.Write([]byte("four\n"))
	if b, _ := os.ReadFile(path); string(b) != "three\nfour\n" {
		t.Errorf("FILE after a second Reopen: %q", b)
	}
}

// A rotation that finds FILE renamed away (logrotate, before its SIGHUP)
// shifts nothing: it goes on in a new FILE.
func TestRotateAfterLogrotateRenamed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	r, err := OpenRotatingFile(path, Rotation{MaxSize: 100, Keep: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Write(lines(0, 1, 60))
	os.Rename(path, path+"-old")
	r.Write(lines(1, 1, 60)) // past the limit: rotates
	if b, _ := os.ReadFile(path + "-old"); string(b) != string(lines(0, 1, 60)) {
		t.Errorf("renamed file: %q", b)
	}
	if b, _ := os.ReadFile(path); string(b) != string(lines(1, 1, 60)) {
		t.Errorf("FILE: %q", b)
	}
	if _, err := os.Lstat(path + ".1"); err == nil {
		t.Error("FILE.1 made although FILE had been renamed away")
	}
}

// hostileDir is a directory where, as root, links another user left
// belong to nobody (left while the directory was theirs to write: rotating
// in a directory they can write is refused, TestRotateRefusesSharedDirectory).
func hostileDir(t *testing.T) (dir string, own func(string)) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "tmp")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, func(p string) {
		if os.Geteuid() == 0 {
			if err := os.Lchown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Symbolic links left at FILE.1, FILE.2 and FILE.3 are replaced by the
// rotated files, never followed: the file they point to stays as it was.
func TestRotateNeverFollowsSymlinks(t *testing.T) {
	dir, nobody := hostileDir(t)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "events.jsonl")
	for _, s := range []string{".1", ".2", ".3"} {
		if err := os.Symlink(victim, path+s); err != nil {
			t.Fatal(err)
		}
		nobody(path + s)
	}
	r, err := OpenRotatingFile(path, Rotation{MaxSize: 100, Keep: 3})
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for i := range 5 {
		b := lines(i, 1, 100)
		if _, err := r.Write(b); err != nil {
			t.Fatal(err)
		}
		want = append(want, b...)
	}
	r.Close()
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Errorf("the link's target now holds %q", b)
	}
	if got := readSet(t, path, 3, 100); !bytes.Equal(got, want[100:]) {
		t.Errorf("files hold %q, want %q", got, want[100:])
	}

	// A link at FILE itself, found by Reopen, is refused: writing goes on
	// in the file open until then.
	path = filepath.Join(dir, "other.jsonl")
	r, err = OpenRotatingFile(path, Rotation{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Write([]byte("one\n"))
	os.Rename(path, path+".old")
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	nobody(path)
	if err := r.Reopen(); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Reopen onto a symbolic link: %v, want refused", err)
	}
	r.Write([]byte("two\n"))
	if b, _ := os.ReadFile(path + ".old"); string(b) != "one\ntwo\n" {
		t.Errorf("the file open before: %q", b)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Errorf("the link's target now holds %q", b)
	}
}

// A rotation that cannot be done (a directory at FILE.1) is reported and
// counted, and FILE stays within MaxSize: the lines that no longer fit are
// refused (the output queue counts their events lost at stage output)
// until the way is clear and it rotates again.
func TestRotateFailureKeepsFileBounded(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	if err := os.Mkdir(path+".1", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path+".1", "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reports []error
	r, err := OpenRotatingFile(path, Rotation{MaxSize: 100, Keep: 1, OnError: func(err error) {
		mu.Lock()
		reports = append(reports, err)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n, err := r.Write(lines(0, 1, 60)); err != nil || n != 60 {
		t.Fatalf("Write: %d, %v", n, err)
	}
	for i := 1; i < 1000; i++ {
		if n, err := r.Write(lines(i, 1, 60)); err == nil || n != 0 {
			t.Fatalf("Write past MaxSize with rotating failing: %d, %v; want 0 and an error", n, err)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != string(lines(0, 1, 60)) {
		t.Errorf("FILE holds %d bytes, want the first line alone (MaxSize 100)", len(b))
	}
	if len(reports) != 1 || reports[0] == nil {
		t.Fatalf("reports %v, want one error", reports)
	}
	// Tried again at most once a second: 999 refused writes, one failure.
	if n := r.RotationsFailed(); n != 1 {
		t.Errorf("RotationsFailed() = %d, want 1", n)
	}
	os.RemoveAll(path + ".1")
	time.Sleep(rotateRetry + 50*time.Millisecond)
	if n, err := r.Write(lines(3, 1, 60)); err != nil || n != 60 {
		t.Fatalf("Write once the way is clear: %d, %v", n, err)
	}
	if len(reports) != 2 || reports[1] != nil {
		t.Errorf("reports %v, want the error then nil", reports)
	}
	if b, _ := os.ReadFile(path + ".1"); string(b) != string(lines(0, 1, 60)) {
		t.Errorf("FILE.1 holds %q", b)
	}
	if b, _ := os.ReadFile(path); string(b) != string(lines(3, 1, 60)) {
		t.Errorf("FILE holds %q", b)
	}
	if n := r.RotationsFailed(); n != 1 {
		t.Errorf("RotationsFailed() = %d after a rotation that worked, want 1", n)
	}
}

// Through the JSON sink and the pipeline: the events a failing rotation
// refused are lost at stage output, the failures are in the stats, and
// nothing past MaxSize reaches FILE.
func TestRotateFailureCounted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	if err := os.Mkdir(path+".1", 0o700); err != nil {
		t.Fatal(err)
	}
	const limit = 4096
	r, err := OpenRotatingFile(path, Rotation{MaxSize: limit, Keep: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := NewJSONSink(r, OutputOptions{})
	p := tracer.NewPipeline(tracer.DefaultConfig(), s)
	const events = 1000
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range events {
		e := tracer.Event{Time: base.Add(time.Duration(i) * time.Microsecond), Backend: "ebpf", PID: uint32(i + 1), Comm: "storm",
			Type: vocab.TypeSignal, Syscall: "kill", TargetPID: 1, Signal: 10}
		if err := s.Write(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Logf("Close: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	written := bytes.Count(b, []byte("\n"))
	st := p.Stats(idle{})
	t.Logf("%d events: %d in FILE (%d bytes), %d lost at stage output, %d failed rotations", events, written, len(b), st.Lost[tracer.LostOutput], st.RotationsFailed)
	if len(b) > limit {
		t.Errorf("FILE holds %d bytes, past MaxSize %d", len(b), limit)
	}
	if written == 0 || uint64(written)+st.Lost[tracer.LostOutput] != events {
		t.Errorf("%d events in FILE and %d lost at stage output, want %d in all", written, st.Lost[tracer.LostOutput], events)
	}
	if st.RotationsFailed == 0 {
		t.Error("the pipeline's stats count no failed rotation")
	}
}

// idle is a backend with no figures of its own.
type idle struct{ tracer.Backend }

func (idle) Stats() tracer.Stats { return tracer.Stats{} }

// Rotating FILE needs a directory no other user can write: another user
// could put a directory at FILE.1 and stop rotation for good (the sticky
// bit stops them removing tracer's files, not creating names). It is
// refused as bad input, before FILE is made; without rotation the same
// directory is fine.
func TestRotateRefusesSharedDirectory(t *testing.T) {
	type dirCase struct {
		name string
		mode os.FileMode
		uid  int
	}
	cases := []dirCase{{"sticky", os.ModeSticky | 0o777, -1}, {"world-writable", 0o777, -1}, {"others-write", 0o703, -1}}
	if os.Geteuid() == 0 {
		cases = append(cases, dirCase{"another user's", 0o755, 65534}, dirCase{"a group's", 0o775, -2})
	}
	for _, c := range cases {
		dir := filepath.Join(t.TempDir(), "d")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, c.mode); err != nil {
			t.Fatal(err)
		}
		switch c.uid {
		case -2:
			if err := os.Chown(dir, 0, 65534); err != nil {
				t.Fatal(err)
			}
		case -1:
		default:
			if err := os.Chown(dir, c.uid, c.uid); err != nil {
				t.Fatal(err)
			}
		}
		path := filepath.Join(dir, "events.jsonl")
		r, err := OpenRotatingFile(path, Rotation{MaxSize: 4096, Keep: 1})
		if err == nil {
			r.Close()
		}
		if !errors.Is(err, vocab.ErrUsage) || !strings.Contains(err.Error(), "other users can write") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s directory (%v): OpenRotatingFile = %v, want one line of bad input saying other users can write it", c.name, c.mode, err)
		}
		if err := CheckRotationDir(path); !errors.Is(err, vocab.ErrUsage) {
			t.Errorf("%s directory: CheckRotationDir = %v, want bad input", c.name, err)
		}
		if _, err := os.Lstat(path); err == nil {
			t.Errorf("%s directory: a refused rotation made FILE", c.name)
		}
		if r, err := OpenRotatingFile(path, Rotation{}); err != nil {
			t.Errorf("%s directory without rotation: %v", c.name, err)
		} else {
			r.Close()
		}
	}
	// Tracer's own directory, 0755 or 0700: fine.
	for _, mode := range []os.FileMode{0o755, 0o700} {
		dir := filepath.Join(t.TempDir(), "d")
		if err := os.Mkdir(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := CheckRotationDir(filepath.Join(dir, "events.jsonl")); err != nil {
			t.Errorf("a %v directory of tracer's own: %v", mode, err)
		}
	}
}

// tally counts the events in files: each line valid JSON, each event's
// number (its pid) seen once.
type tally struct {
	mu      sync.Mutex
	seen    []bool
	lines   int
	bytes   int64
	files   int
	limit   int64
	maxLine int
}

func (ty *tally) file(t *testing.T, path string) {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Errorf("%v", err)
		return
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want a regular file 0600", filepath.Base(path), fi.Mode())
	}
	f, err := os.Open(path)
	if err != nil {
		t.Errorf("%v", err)
		return
	}
	defer f.Close()
	ty.files++
	var size int64
	last := 0
	br := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := br.ReadSlice('\n')
		if err == io.EOF && len(line) == 0 {
			break
		}
		if err != nil {
			t.Errorf("%s: %v (a line cut?)", filepath.Base(path), err)
			return
		}
		size += int64(len(line))
		ty.bytes += int64(len(line))
		last = len(line)
		ty.maxLine = max(ty.maxLine, len(line))
		if !json.Valid(line) {
			t.Errorf("%s: not a JSON line: %q", filepath.Base(path), line)
			return
		}
		i := bytes.Index(line, []byte(`"pid":`))
		j := bytes.IndexByte(line[i+6:], ',')
		pid, err := strconv.Atoi(string(line[i+6 : i+6+j]))
		if i < 0 || j < 0 || err != nil || pid >= len(ty.seen) {
			t.Errorf("%s: no event number in %q", filepath.Base(path), line)
			return
		}
		if ty.seen[pid] {
			t.Errorf("event %d written twice", pid)
		}
		ty.seen[pid] = true
		ty.lines++
	}
	if size-int64(last) > ty.limit {
		t.Errorf("%s: %d bytes, past the limit of %d by more than its last line", filepath.Base(path), size, ty.limit)
	}
}

// A million events through the JSON sink's output queue into a rotating
// file, 10MB a file and 3 kept, with a SIGHUP (Reopen) every 100 ms and,
// every third, logrotate's rename of FILE before it: the lines in the
// kept files, the files renamed away and the files rotation removed, with
// the loss counted at stage queue and output, are the events written,
// each once; no file is past the limit by more than a line; every file is
// 0600; every line is JSON. With -short (the -race pass, several times
// slower) 200,000 events into 1MB files.
func TestRotateUnderReopenLosesNothing(t *testing.T) {
	events, size := 1_000_000, "10MB"
	if testing.Short() {
		events, size = 200_000, "1MB"
	}
	limit, err := ParseSize(size)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	r, err := OpenRotatingFile(path, Rotation{MaxSize: limit, Keep: 3})
	if err != nil {
		t.Fatal(err)
	}
	ty := &tally{seen: make([]bool, events), limit: limit}
	reopens := 0
	// The files are read at the end: reading them here would stall the
	// writer, and the queue would drop (and count) what it cannot hold.
	var read []string
	dropped := 0
	r.dropping = func(p string) { // in the writer goroutine, before the file goes
		keep := fmt.Sprintf("%s-removed-%d", path, dropped)
		if err := os.Link(p, keep); err != nil {
			t.Errorf("keeping %s: %v", p, err)
		}
		read = append(read, keep)
		dropped++
	}
	s := NewJSONSink(r, OutputOptions{})

	stop, done := make(chan struct{}), make(chan struct{})
	var aside []string
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			// Renamed every third time only, so that FILE grows to the
			// limit between renames on a machine half as fast as this.
			name := filepath.Join(dir, fmt.Sprintf("events.jsonl-%d", k))
			var err error
			if k%3 == 2 {
				err = os.Rename(path, name)
			}
			if rerr := r.Reopen(); rerr != nil {
				t.Errorf("Reopen: %v", rerr)
			}
			reopens++
			if k%3 != 2 {
				continue
			}
			if err == nil {
				aside = append(aside, name)
			} else if !errors.Is(err, os.ErrNotExist) {
				t.Errorf("rename: %v", err) // FILE is missing only between a rotation's rename and create
			}
		}
	}()

	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	start := time.Now()
	// Paced to take 2 s at least: a fast machine would be done before
	// the third tick.
	const pace = 2 * time.Second
	for i := range events {
		if i%1000 == 0 {
			time.Sleep(time.Until(start.Add(pace * time.Duration(i) / time.Duration(events))))
		}
		e := tracer.Event{
			Time: base.Add(time.Duration(i) * time.Microsecond), Backend: "ebpf", PID: uint32(i), Comm: "storm",
			UID: 1000, AUID: 1000, ExecID: tracer.ExecID{PID: uint32(i), Start: 77}, Cgroup: "/user.slice/user-1000.slice/session-3.scope",
		}
		switch i % 3 {
		case 0:
			e.Type, e.PPID, e.Filename = vocab.TypeExec, 1, "/usr/bin/true"
			e.Argv = strings.Fields("true " + strings.Repeat("arg ", i%9))
		case 1:
			e.Type, e.Syscall, e.ChildPID = vocab.TypeFork, "clone", uint32(i+1)
		case 2:
			e.Type, e.Syscall, e.TargetPID, e.Signal = vocab.TypeSignal, "kill", int32(i), 10
		}
		if err := s.Write(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	close(stop)
	<-done
	kept := 0
	for _, name := range []string{path + ".3", path + ".2", path + ".1", path} {
		// A kept name may be missing: the test renamed FILE away between
		// a rotation's look at it and its rename.
		if _, err := os.Lstat(name); err == nil {
			ty.file(t, name)
			kept++
		}
	}
	for _, name := range append(aside, read...) {
		ty.file(t, name)
	}
	moved := len(aside)
	if _, err := os.Lstat(path + ".4"); err == nil {
		t.Error("FILE.4 exists: only 3 rotated files are kept")
	}
	loss := s.Loss()
	t.Logf("%d events in %v, %d reopens; %d files read: %d renamed away, %d removed past --output-keep, %d kept; %d lines, %d bytes (longest %d); lost: queue %d, output %d",
		events, took.Round(time.Millisecond), reopens, ty.files, moved, dropped, kept, ty.lines, ty.bytes, ty.maxLine, loss.Queue, loss.Output)
	if got := uint64(ty.lines) + loss.Queue + loss.Output; got != uint64(events) {
		t.Errorf("%d lines + %d lost = %d, want the %d events written", ty.lines, loss.Queue+loss.Output, got, events)
	}
	if moved < 3 || dropped == 0 {
		t.Errorf("%d renames and %d removals: the test did not rotate both ways", moved, dropped)
	}
}

// The torn end of a line a full disk left is taken back: the file holds
// whole lines, and what Write counts is what they hold.
func TestRotateTakesBackTornLine(t *testing.T) {
	tracertest.NeedRoot(t) // mounts a small tmpfs to fill
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	path := filepath.Join(dir, "events.jsonl")
	r, err := OpenRotatingFile(path, Rotation{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	written := 0
	var werr error
	for i := 0; werr == nil && i < 1000; i++ {
		var n int
		n, werr = r.Write(lines(i*10, 10, 333))
		written += n
	}
	if werr == nil {
		t.Fatal("64k of tmpfs never filled")
	}
	b, _ := os.ReadFile(path)
	if len(b) != written || len(b)%333 != 0 {
		t.Errorf("FILE holds %d bytes, Write counted %d; want whole lines of 333 bytes, counted", len(b), written)
	}
	// Room again (logrotate's copytruncate): writing goes on at the new
	// end, with no hole before it.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Write([]byte("again\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "again\n" {
		t.Errorf("after room was made: %q", b[:min(len(b), 40)])
	}
}

// What rotating costs the writer: 256 KiB chunks of 280-byte lines into
// a plain file and into a rotating one (10MB files, 3 kept).
func BenchmarkWrite(b *testing.B) {
	chunk := lines(0, (256<<10)/280, 280)
	for _, name := range []string{"file", "rotating"} {
		b.Run(name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "events.jsonl")
			var w io.WriteCloser
			var err error
			if name == "file" {
				w, err = CreateOutput(path)
			} else {
				w, err = OpenRotatingFile(path, Rotation{MaxSize: 10e6, Keep: 3})
			}
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			b.SetBytes(int64(len(chunk)))
			size := 0
			for range b.N {
				if _, err := w.Write(chunk); err != nil {
					b.Fatal(err)
				}
				// The plain file kept as small as the rotating one's.
				if size += len(chunk); name == "file" && size > 10e6 {
					f := w.(*os.File)
					f.Truncate(0)
					f.Seek(0, io.SeekStart)
					size = 0
				}
			}
		})
	}
}
