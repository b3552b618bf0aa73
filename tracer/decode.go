// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// jsonEvent is a JSON line as sink.AppendJSON writes it (docs/events.md):
// the wire schema, kept with Event (its UnmarshalJSON) so that programs
// reading events (bench counts a workload's events in `watch --format
// json` logs, tracer report reads them) decode with the tracer's own
// schema, without the encoders and destinations of tracer/sink.
type jsonEvent struct {
	Time         string         `json:"time"`
	Backend      jsonString     `json:"backend"`
	Type         string         `json:"type"`
	PID          uint32         `json:"pid"`
	Comm         jsonString     `json:"comm"`
	UID          uint32         `json:"uid"`
	AUID         uint32         `json:"auid"`
	GID          *uint32        `json:"gid"`
	EUID         *uint32        `json:"euid"`
	SUID         *uint32        `json:"suid"`
	FSUID        *uint32        `json:"fsuid"`
	EGID         *uint32        `json:"egid"`
	SGID         *uint32        `json:"sgid"`
	FSGID        *uint32        `json:"fsgid"`
	Session      uint32         `json:"ses"`
	TTY          jsonString     `json:"tty"`
	Exe          jsonString     `json:"exe"`
	Cwd          jsonString     `json:"cwd"`
	Key          jsonString     `json:"key"`
	ExecID       string         `json:"exec_id"`
	ParentExecID string         `json:"parent_exec_id"`
	Cgroup       jsonString     `json:"cgroup"`
	CgroupCut    bool           `json:"cgroup_truncated"`
	ContainerID  jsonString     `json:"container_id"`
	Unit         jsonString     `json:"unit"`
	Ancestors    []jsonAncestor `json:"ancestors"`

	// Kubernetes (pod.go)
	Pod          jsonString `json:"pod"`
	PodNamespace jsonString `json:"pod_namespace"`
	PodUID       jsonString `json:"pod_uid"`
	PodContainer jsonString `json:"container_name"`
	Image        jsonString `json:"image"`
	ImageID      jsonString `json:"image_id"`

	PPID     uint32       `json:"ppid"`
	Filename jsonString   `json:"filename"`
	Argv     []jsonString `json:"argv"`
	ArgvCut  bool         `json:"argv_truncated"`
	FileCut  bool         `json:"filename_truncated"`
	Ret      int64        `json:"ret"`
	ChildPID uint32       `json:"child_pid"`
	Syscall  jsonString   `json:"syscall"`

	TargetPID    int32      `json:"target_pid"`
	Signal       int        `json:"signal"`
	Code         string     `json:"code"`
	Origin       string     `json:"origin"`
	Result       string     `json:"result"`
	TargetComm   jsonString `json:"target_comm"`
	TargetExecID string     `json:"target_exec_id"`

	ExitCode   int           `json:"exit_code"`
	CoreDumped *bool         `json:"core_dumped"`
	KilledBy   *jsonKilledBy `json:"killed_by"`
	OOMKill    bool          `json:"oom_kill"`

	Source      string            `json:"source"`
	CgroupID    uint64            `json:"cgroup_id"`
	WindowStart string            `json:"window_start"`
	WindowEnd   string            `json:"window_end"`
	Limit       uint32            `json:"limit"`
	Suppressed  uint64            `json:"suppressed"`
	ByType      map[string]uint64 `json:"suppressed_by_type"`
}

type jsonAncestor struct {
	PID    uint32     `json:"pid"`
	Comm   jsonString `json:"comm"`
	ExecID string     `json:"exec_id"`
}

type jsonKilledBy struct {
	PID     uint32     `json:"pid"`
	Comm    jsonString `json:"comm"`
	ExecID  string     `json:"exec_id"`
	Code    string     `json:"code"`
	Origin  string     `json:"origin"`
	Syscall jsonString `json:"syscall"`
}

// UnmarshalJSON reads an event back from a line sink.AppendJSON wrote: the
// JSON sink's counterpart. Exec ids keep their pid and start time (the
// boot id is the node's). A field that is absent reads as zero; a type,
// time, exec id or signal code the encoder cannot have written is an
// error.
func (e *Event) UnmarshalJSON(b []byte) error {
	var j jsonEvent
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = Event{}
	var err error
	if j.Time != "" {
		if e.Time, err = time.Parse(time.RFC3339Nano, j.Time); err != nil {
			return fmt.Errorf("event time: %w", err)
		}
	}
	if e.Type = vocab.TypeNamed(j.Type); e.Type == vocab.TypeNone {
		return fmt.Errorf("unknown event type %q", j.Type)
	}
	e.Backend, e.PID, e.Comm, e.UID, e.AUID = string(j.Backend), j.PID, string(j.Comm), j.UID, j.AUID
	e.Cgroup, e.ContainerID, e.Unit, e.CgroupTruncated = string(j.Cgroup), string(j.ContainerID), string(j.Unit), j.CgroupCut
	e.Pod = PodInfo{Name: string(j.Pod), Namespace: string(j.PodNamespace), UID: string(j.PodUID),
		Container: string(j.PodContainer), Image: string(j.Image), ImageID: string(j.ImageID)}
	// gid says the backend read the ids; one left out is the real one
	// (sink's appendUserJSON).
	if e.HasCreds = j.GID != nil; e.HasCreds {
		e.GID = *j.GID
		e.SameCreds()
		for _, c := range [...]struct {
			v   *uint32
			dst *uint32
		}{{j.EUID, &e.EUID}, {j.SUID, &e.SUID}, {j.FSUID, &e.FSUID}, {j.EGID, &e.EGID}, {j.SGID, &e.SGID}, {j.FSGID, &e.FSGID}} {
			if c.v != nil {
				*c.dst = *c.v
			}
		}
	}
	e.Session, e.TTY, e.Exe, e.Cwd, e.Key = j.Session, string(j.TTY), string(j.Exe), string(j.Cwd), string(j.Key)
	ids := []struct {
		s  string
		id *ExecID
	}{{j.ExecID, &e.ExecID}, {j.ParentExecID, &e.ParentExecID}, {j.TargetExecID, &e.TargetExecID}}
	for _, x := range ids {
		if err := parseExecIDField(x.s, x.id); err != nil {
			return err
		}
	}
	for _, a := range j.Ancestors {
		anc := Ancestor{PID: a.PID, Comm: string(a.Comm)}
		if err := parseExecIDField(a.ExecID, &anc.ExecID); err != nil {
			return err
		}
		e.Ancestors = append(e.Ancestors, anc)
	}
	switch e.Type {
	case vocab.TypeExec:
		e.PPID, e.Filename, e.Ret = j.PPID, string(j.Filename), j.Ret
		if j.Argv != nil {
			e.Argv = make([]string, len(j.Argv))
			for i, a := range j.Argv {
				e.Argv[i] = string(a)
			}
		}
		e.ArgvTruncated, e.FilenameTruncated = j.ArgvCut, j.FileCut
	case vocab.TypeFork:
		e.ChildPID, e.Syscall = j.ChildPID, string(j.Syscall)
	case vocab.TypeSignal:
		e.TargetPID, e.Signal, e.Syscall, e.Ret, e.TargetComm = j.TargetPID, j.Signal, string(j.Syscall), j.Ret, string(j.TargetComm)
		if j.Code != "" {
			e.HasCode = true
			if e.Code, err = vocab.SigCodeNamed(e.Signal, j.Code); err != nil {
				return err
			}
		}
		e.Origin = vocab.OriginNamed(j.Origin)
		e.Result = vocab.ResultNamed(j.Result)
	case vocab.TypeExit:
		e.ExitCode, e.Signal, e.OOMKill = j.ExitCode, j.Signal, j.OOMKill
		if e.Signal != 0 {
			e.CoreUnknown = j.CoreDumped == nil
			e.CoreDumped = j.CoreDumped != nil && *j.CoreDumped
		}
		if k := j.KilledBy; k != nil {
			e.KilledBy = KilledBy{PID: k.PID, Comm: string(k.Comm), Origin: vocab.OriginNamed(k.Origin), Syscall: string(k.Syscall)}
			if err := parseExecIDField(k.ExecID, &e.KilledBy.ExecID); err != nil {
				return err
			}
			if e.KilledBy.Code, err = vocab.SigCodeNamed(e.Signal, k.Code); err != nil {
				return err
			}
		}
	case vocab.TypeThrottle:
		return j.throttle(&e.Throttle)
	}
	return nil
}

// throttle reads a throttle event's own fields.
func (j *jsonEvent) throttle(t *Throttle) error {
	for s := SourceCgroup; s <= SourceProcess; s++ {
		if s.String() == j.Source {
			t.Source = s
		}
	}
	if t.Source == SourceNone {
		return fmt.Errorf("unknown throttle source %q", j.Source)
	}
	var err error
	if t.Start, err = time.Parse(time.RFC3339Nano, j.WindowStart); err != nil {
		return fmt.Errorf("throttle window_start: %w", err)
	}
	if t.End, err = time.Parse(time.RFC3339Nano, j.WindowEnd); err != nil {
		return fmt.Errorf("throttle window_end: %w", err)
	}
	t.CgroupID, t.Limit = j.CgroupID, j.Limit
	for name, n := range j.ByType {
		typ := vocab.TypeNamed(name)
		if typ == vocab.TypeNone {
			return fmt.Errorf("unknown type %q in suppressed_by_type", name)
		}
		t.Add(typ, n)
	}
	if t.Suppressed() != j.Suppressed {
		return fmt.Errorf("throttle event: suppressed %d, but suppressed_by_type sums to %d", j.Suppressed, t.Suppressed())
	}
	return nil
}

// jsonString is a string field the encoder (tracer/sink) wrote: a
// \udcXX escape (a lone low surrogate, which encoding/json would read as
// U+FFFD) is the byte 0xXX that was not UTF-8, so every string reads
// back byte for byte.
type jsonString string

// UnmarshalJSON reads a JSON string (or null) with \udcXX as byte XX;
// other lone surrogates read as U+FFFD, as encoding/json reads them.
func (s *jsonString) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("not a JSON string: %.40q", b)
	}
	b = b[1 : len(b)-1]
	if bytes.IndexByte(b, '\\') < 0 {
		*s = jsonString(b)
		return nil
	}
	out, err := AppendJSONUnquoted(make([]byte, 0, len(b)), b)
	if err != nil {
		return err
	}
	*s = jsonString(out)
	return nil
}

// AppendJSONUnquoted appends to out the bytes of the body of a JSON string
// (what lies between its quotes) as tracer's encoder wrote it: \udcXX is
// the byte XX, other lone surrogates read as U+FFFD. The one unescaper of
// the project's JSON (events read back, the journal's fields).
func AppendJSONUnquoted(out, b []byte) ([]byte, error) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\\')
		if i < 0 {
			out = append(out, b...)
			break
		}
		out, b = append(out, b[:i]...), b[i:]
		if len(b) < 2 {
			return out, errBadEscape
		}
		switch c := b[1]; c {
		case '"', '\\', '/':
			out = append(out, c)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(b[2:])
			if !ok {
				return out, errBadEscape
			}
			b = b[6:]
			switch {
			case 0xdc80 <= r && r <= 0xdcff:
				out = append(out, byte(r))
			case utf16.IsSurrogate(r):
				// A high surrogate and a low one after it are one rune.
				if r < 0xdc00 && len(b) >= 6 && b[0] == '\\' && b[1] == 'u' {
					if r2, ok := hex4(b[2:]); ok && utf16.DecodeRune(r, r2) != utf8.RuneError {
						out, b = utf8.AppendRune(out, utf16.DecodeRune(r, r2)), b[6:]
						break
					}
				}
				out = utf8.AppendRune(out, utf8.RuneError)
			default:
				out = utf8.AppendRune(out, r)
			}
			continue
		default:
			return out, errBadEscape
		}
		b = b[2:]
	}
	return out, nil
}

var errBadEscape = errors.New("bad escape in a JSON string")

// hex4 reads the 4 hex digits b starts with.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(v), err == nil
}

func parseExecIDField(s string, id *ExecID) error {
	if s == "" {
		return nil
	}
	v, ok := ParseExecID(s)
	if !ok {
		return fmt.Errorf("bad exec id %q", s)
	}
	*id = v
	return nil
}
