// SPDX-License-Identifier: Apache-2.0

package bpfbackend

import (
	"os"
	"strconv"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// exeCacheMax bounds the processes whose program exeCache remembers.
const exeCacheMax = 65536

// exeCache fills Event.Exe, the program of the process that made the
// event, as the audit backend has it: the kernel reads a path only at
// exec (the new program's), so user space remembers it per process, and
// reads /proc/PID/exe once for a process it first sees elsewhere. Two
// generations of at most max/2 processes each: a process looked up is
// kept, one not seen for a generation is dropped (a cheap LRU).
type exeCache struct {
	cur, old map[uint32]exeEntry
	max      int
	readExe  func(pid uint32) string
	// The last process looked up: a storm's events are one process's,
	// and a map lookup costs more than the rest of filling its event.
	last    tracer.ExecID
	lastExe string
	lastOK  bool
}

// exeEntry is a pid's program; start is the process's ExecID start, 0
// when it was put at its parent's fork (the fork record has no start:
// the first event of that pid takes it).
type exeEntry struct {
	start uint64
	exe   string
}

func newExeCache(max int, readExe func(uint32) string) *exeCache {
	return &exeCache{cur: make(map[uint32]exeEntry), max: max, readExe: readExe}
}

// readProcExe is /proc/PID/exe, "" when the process is gone or has no
// program (a kernel thread).
func readProcExe(pid uint32) string {
	s, err := os.Readlink("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/exe")
	if err != nil {
		return ""
	}
	s, _ = tracer.CapString(s, tracer.FilenameMax)
	return s
}

func (c *exeCache) get(id tracer.ExecID) (string, bool) {
	en, ok := c.cur[id.PID]
	if !ok {
		if en, ok = c.old[id.PID]; ok {
			c.put(id.PID, en)
		}
	}
	if !ok || en.start != 0 && en.start != id.Start {
		return "", false // a reused pid's
	}
	if en.start == 0 { // put at the fork: now its start is known
		c.cur[id.PID] = exeEntry{id.Start, en.exe}
	}
	return en.exe, true
}

func (c *exeCache) put(pid uint32, en exeEntry) {
	if pid == c.last.PID {
		c.lastOK = false
	}
	if len(c.cur) >= c.max/2 {
		if _, ok := c.cur[pid]; !ok {
			c.old, c.cur = c.cur, make(map[uint32]exeEntry, len(c.cur))
		}
	}
	c.cur[pid] = en
}

// lookup is the program of process id, from the cache or /proc.
func (c *exeCache) lookup(id tracer.ExecID) string {
	if c.lastOK && id == c.last {
		return c.lastExe
	}
	exe, ok := c.get(id)
	if !ok {
		exe = c.readExe(id.PID)
		c.put(id.PID, exeEntry{id.Start, exe})
	}
	c.last, c.lastExe, c.lastOK = id, exe, true
	return exe
}

// fill sets e.Exe. newExe is what an exec record says the process runs
// now ("" for a failed exec or another record).
func (c *exeCache) fill(e *tracer.Event, newExe string) {
	if e.PID == 0 {
		return
	}
	switch e.Type {
	case vocab.TypeExec:
		// The program before the exec: the caller's own, else, for a
		// process not seen yet, its parent's (a vfork or posix_spawn
		// child has not exec'd; /proc/PID/exe is the new one by now),
		// as the audit backend does.
		if exe, ok := c.get(e.ExecID); ok {
			e.Exe = exe
		} else {
			e.Exe = c.lookup(e.ParentExecID)
		}
		if newExe != "" {
			c.put(e.PID, exeEntry{e.ExecID.Start, newExe})
		} else if e.Ret == 0 {
			// A successful exec whose record has no program (--exe: no
			// path walk): the next event reads /proc/PID/exe.
			c.forget(e.PID)
		}
	case vocab.TypeFork:
		e.Exe = c.lookup(e.ExecID)
		if e.ChildPID != 0 {
			c.put(e.ChildPID, exeEntry{0, e.Exe})
		}
	case vocab.TypeSignal:
		e.Exe = c.lookup(e.ExecID)
	case vocab.TypeExit:
		e.Exe = c.lookup(e.ExecID)
		c.forget(e.PID)
	}
}

// forget drops pid's program.
func (c *exeCache) forget(pid uint32) {
	delete(c.cur, pid)
	delete(c.old, pid)
	if pid == c.last.PID {
		c.lastOK = false
	}
}
