package tracer

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// jsonEvent is a JSON line as AppendJSON writes it (docs/events.md): the
// wire schema, kept beside the encoder so that programs reading events
// (bench counts a workload's events in `watch --format json` logs) decode
// with the tracer's own schema rather than a copy of it.
type jsonEvent struct {
	Time         string         `json:"time"`
	Backend      string         `json:"backend"`
	Type         string         `json:"type"`
	PID          uint32         `json:"pid"`
	Comm         string         `json:"comm"`
	UID          uint32         `json:"uid"`
	AUID         uint32         `json:"auid"`
	ExecID       string         `json:"exec_id"`
	ParentExecID string         `json:"parent_exec_id"`
	Cgroup       string         `json:"cgroup"`
	ContainerID  string         `json:"container_id"`
	Unit         string         `json:"unit"`
	Ancestors    []jsonAncestor `json:"ancestors"`

	PPID     uint32   `json:"ppid"`
	Filename string   `json:"filename"`
	Argv     []string `json:"argv"`
	ArgvCut  bool     `json:"argv_truncated"`
	Ret      int64    `json:"ret"`
	ChildPID uint32   `json:"child_pid"`
	Syscall  string   `json:"syscall"`

	TargetPID    int32  `json:"target_pid"`
	Signal       int    `json:"signal"`
	Code         string `json:"code"`
	Origin       string `json:"origin"`
	Result       string `json:"result"`
	TargetComm   string `json:"target_comm"`
	TargetExecID string `json:"target_exec_id"`

	ExitCode   int           `json:"exit_code"`
	CoreDumped *bool         `json:"core_dumped"`
	KilledBy   *jsonKilledBy `json:"killed_by"`
	OOMKill    bool          `json:"oom_kill"`
}

type jsonAncestor struct {
	PID    uint32 `json:"pid"`
	Comm   string `json:"comm"`
	ExecID string `json:"exec_id"`
}

type jsonKilledBy struct {
	PID     uint32 `json:"pid"`
	Comm    string `json:"comm"`
	ExecID  string `json:"exec_id"`
	Code    string `json:"code"`
	Origin  string `json:"origin"`
	Syscall string `json:"syscall"`
}

// UnmarshalJSON reads an event back from a line AppendJSON wrote: the
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
	if e.Type = typeNamed(j.Type); e.Type == TypeNone {
		return fmt.Errorf("unknown event type %q", j.Type)
	}
	e.Backend, e.PID, e.Comm, e.UID, e.AUID = j.Backend, j.PID, j.Comm, j.UID, j.AUID
	e.Cgroup, e.ContainerID, e.Unit = j.Cgroup, j.ContainerID, j.Unit
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
		anc := Ancestor{PID: a.PID, Comm: a.Comm}
		if err := parseExecIDField(a.ExecID, &anc.ExecID); err != nil {
			return err
		}
		e.Ancestors = append(e.Ancestors, anc)
	}
	switch e.Type {
	case TypeExec:
		e.PPID, e.Filename, e.Argv, e.Ret = j.PPID, j.Filename, j.Argv, j.Ret
		e.ArgvTruncated = j.ArgvCut
	case TypeFork:
		e.ChildPID, e.Syscall = j.ChildPID, j.Syscall
	case TypeSignal:
		e.TargetPID, e.Signal, e.Syscall, e.Ret, e.TargetComm = j.TargetPID, j.Signal, j.Syscall, j.Ret, j.TargetComm
		if j.Code != "" {
			e.HasCode = true
			if e.Code, err = sigCodeNamed(e.Signal, j.Code); err != nil {
				return err
			}
		}
		e.Origin = originNamed(j.Origin)
		e.Result = resultNamed(j.Result)
	case TypeExit:
		e.ExitCode, e.Signal, e.OOMKill = j.ExitCode, j.Signal, j.OOMKill
		if e.Signal != 0 {
			e.CoreUnknown = j.CoreDumped == nil
			e.CoreDumped = j.CoreDumped != nil && *j.CoreDumped
		}
		if k := j.KilledBy; k != nil {
			e.KilledBy = KilledBy{PID: k.PID, Comm: k.Comm, Origin: originNamed(k.Origin), Syscall: k.Syscall}
			if err := parseExecIDField(k.ExecID, &e.KilledBy.ExecID); err != nil {
				return err
			}
			if e.KilledBy.Code, err = sigCodeNamed(e.Signal, k.Code); err != nil {
				return err
			}
		}
	}
	return nil
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

func typeNamed(s string) EventType {
	for _, t := range AllTypes {
		if t.String() == s {
			return t
		}
	}
	return TypeNone
}

func originNamed(s string) Origin {
	for _, o := range []Origin{OriginUser, OriginKernel} {
		if o.String() == s {
			return o
		}
	}
	return OriginUnknown
}

func resultNamed(s string) SignalResult {
	for r := range resultNames {
		if r > 0 && resultNames[r] == s {
			return SignalResult(r)
		}
	}
	return ResultUnknown
}

// sigCodeNamed is SigCodeName's inverse: the si_code of signal sig that
// name names (a number for codes the headers do not name).
func sigCodeNamed(sig int, name string) (int32, error) {
	for code, n := range genericCodes {
		if n == name {
			return code, nil
		}
	}
	for i, n := range perSignalCodes[sig] {
		if n == name {
			return int32(i + 1), nil
		}
	}
	v, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("unknown signal code %q", name)
	}
	return int32(v), nil
}
