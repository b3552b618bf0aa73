// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"path"
	"strconv"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// OCSFVersion is the Open Cybersecurity Schema Framework release the ocsf
// format follows (testdata/ocsf holds that release's schema of the class).
const OCSFVersion = "1.8.0"

func init() { RegisterFormat("ocsf", AppendOCSF) }

// The class every event is: Process Activity (1007), of System Activity (1).
const ocsfClassUID = 1007

// Process Activity's activities (activity_id).
const (
	ocsfLaunch    = 1
	ocsfTerminate = 2
	ocsfOther     = 99
)

// ocsfClass is every event's class and severity (informational: tracer
// reports what happened and judges none of it).
const ocsfClass = `,"category_uid":1,"category_name":"System Activity","class_uid":1007,"class_name":"Process Activity","severity_id":1,"severity":"Informational"`

// AppendOCSF appends e as one OCSF Process Activity event (a JSON object,
// no newline), as docs/events.md maps each field: actor is who acted
// (the process that execs, forks, signals, or kills), process is what it
// acted on (the new program, the child, the signalled process, the
// process that ended). What OCSF has no attribute for is under unmapped.
// Strings are escaped as in the JSON lines, but a byte that is not UTF-8
// becomes U+FFFD, the raw bytes under unmapped.raw_base64 (utf8.go).
func AppendOCSF(b []byte, e *tracer.Event) []byte {
	if !eventUTF8(e) {
		c := utf8Event(e)
		return appendOCSF(b, &c, e)
	}
	return appendOCSF(b, e, nil)
}

// appendOCSF appends e's event; raw, when not nil, is the event e was
// made UTF-8 from.
func appendOCSF(b []byte, e, raw *tracer.Event) []byte {
	activity, name := ocsfActivity(e)
	b = append(b, `{"activity_id":`...)
	b = strconv.AppendInt(b, int64(activity), 10)
	b = append(b, `,"activity_name":`...)
	b = AppendJSONString(b, name)
	b = append(b, ocsfClass...)
	b = append(b, `,"type_uid":`...)
	b = strconv.AppendInt(b, ocsfClassUID*100+int64(activity), 10)
	b = append(b, `,"type_name":`...)
	b = AppendJSONString(b, "Process Activity: "+ocsfActivityCaption(activity))
	b = append(b, `,"time":`...)
	b = strconv.AppendInt(b, e.Time.UnixMilli(), 10)
	switch e.Type {
	case vocab.TypeExec:
		b = append(b, `,"launch_type_id":3,"launch_type":"Exec"`...)
	case vocab.TypeFork:
		b = append(b, `,"launch_type_id":2,"launch_type":"Fork"`...)
	case vocab.TypeExit:
		if !e.Killed() {
			b = append(b, `,"exit_code":`...)
			b = strconv.AppendInt(b, int64(e.ExitCode), 10)
		}
	case vocab.TypeThrottle:
		// The window, and how many events of it were left out.
		b = append(b, `,"start_time":`...)
		b = strconv.AppendInt(b, e.Throttle.Start.UnixMilli(), 10)
		b = append(b, `,"end_time":`...)
		b = strconv.AppendInt(b, e.Throttle.End.UnixMilli(), 10)
		b = append(b, `,"count":`...)
		b = strconv.AppendUint(b, e.Throttle.Suppressed(), 10)
	}
	if carriesRet(e) {
		if e.Ret == 0 {
			b = append(b, `,"status_id":1,"status":"Success"`...)
		} else {
			b = append(b, `,"status_id":2,"status":"Failure","status_code":`...)
			b = AppendJSONString(b, errnoCode(e.Ret))
		}
	}
	b = append(b, `,"metadata":{"version":"`+OCSFVersion+`","product":{"name":"tracer","vendor_name":"tracer","version":`...)
	b = AppendJSONString(b, ProductVersion)
	b = append(b, `},"log_provider":`...)
	b = AppendJSONString(b, e.Backend)
	b = append(b, `,"profiles":["container","linux/linux_users"],"extensions":[{"name":"linux","uid":"1","version":"`+OCSFVersion+`"}]}`...)
	b = append(b, `,"device":{"type_id":0,"type":"Unknown"`...)
	if h := validUTF8(nodeHostname()); h != "" {
		b = append(b, `,"hostname":`...)
		b = AppendJSONString(b, h)
	}
	// The boot id that starts every exec id: the uids below are unique
	// within this boot.
	b = append(b, `,"boot_uid":`...)
	b = AppendJSONString(b, host.BootID())
	b = append(b, '}')
	b = appendOCSFActor(b, e)
	b = appendOCSFTarget(b, e)
	b = appendOCSFUnmapped(b, e, raw)
	return append(b, '}')
}

// ocsfActivity is e's activity_id and activity_name: an exec and a fork
// launch (launch_type_id says which), an exit terminates, and a signal
// is an activity Process Activity does not define (Other, named Signal),
// as is a throttle (Other, named Throttle).
func ocsfActivity(e *tracer.Event) (int, string) {
	switch e.Type {
	case vocab.TypeExec, vocab.TypeFork:
		return ocsfLaunch, "Launch"
	case vocab.TypeExit:
		return ocsfTerminate, "Terminate"
	case vocab.TypeSignal:
		return ocsfOther, "Signal"
	}
	return ocsfOther, ocsfTitle(e.Type.String())
}

// ocsfActivityCaption is the schema's caption of an activity, for type_name.
func ocsfActivityCaption(activity int) string {
	switch activity {
	case ocsfLaunch:
		return "Launch"
	case ocsfTerminate:
		return "Terminate"
	}
	return "Other"
}

// ocsfTitle capitalizes an event type's name for activity_name.
func ocsfTitle(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// errnoCode names a failed syscall's return value (-2: ENOENT).
func errnoCode(ret int64) string {
	if name := vocab.ErrnoName(-ret); name != "" {
		return name
	}
	return strconv.FormatInt(ret, 10)
}

// appendOCSFActor appends actor: the event's process, but for what the
// kernel did on its own (a kernel signal, a kernel kill), where the actor
// is the kernel (app_name kernel or oom-killer), and for a process killed
// by another, where it is the sender.
func appendOCSFActor(b []byte, e *tracer.Event) []byte {
	b = append(b, `,"actor":{`...)
	switch {
	case e.Type == vocab.TypeSignal && e.Origin == vocab.OriginKernel:
		b = append(b, `"app_name":"kernel"`...)
	case e.Type == vocab.TypeExit && e.Killed() && e.KilledBy.Origin == vocab.OriginKernel:
		b = append(b, `"app_name":`...)
		b = AppendJSONString(b, e.KilledBy.Comm)
	case e.Type == vocab.TypeExit && e.Killed() && e.KilledBy.Origin == vocab.OriginUser:
		k := &e.KilledBy
		b = append(b, `"process":`...)
		b = appendOCSFProcRef(b, int64(k.PID), k.Comm, k.ExecID)
	default:
		b = append(b, `"process":`...)
		b = appendOCSFProcess(b, e, e.Comm, false)
	}
	return append(b, '}')
}

// appendOCSFTarget appends process: what the actor acted on.
func appendOCSFTarget(b []byte, e *tracer.Event) []byte {
	b = append(b, `,"process":`...)
	switch e.Type {
	case vocab.TypeExec:
		name := e.Comm
		if e.Ret == 0 && e.Filename != "" {
			name = path.Base(e.Filename)
		}
		return appendOCSFProcess(b, e, name, true)
	case vocab.TypeFork:
		// The child (or thread) has the forker's name and user, and the
		// forker as its parent; its exec id is in its own events.
		b = append(b, `{"pid":`...)
		b = strconv.AppendUint(b, uint64(e.ChildPID), 10)
		b = append(b, `,"name":`...)
		b = AppendJSONString(b, e.Comm)
		b = appendOCSFUser(b, e)
		b = append(b, `,"parent_process":`...)
		b = appendOCSFProcRef(b, int64(e.PID), e.Comm, e.ExecID)
		return append(b, '}')
	case vocab.TypeSignal:
		if e.Origin == vocab.OriginKernel {
			return appendOCSFProcess(b, e, e.Comm, false)
		}
		return appendOCSFProcRef(b, int64(e.TargetPID), e.TargetComm, e.TargetExecID)
	}
	return appendOCSFProcess(b, e, e.Comm, false)
}

// appendOCSFProcess appends the event's process as a process object, with
// name; image adds the program an exec starts (file, cmd_line).
func appendOCSFProcess(b []byte, e *tracer.Event, name string, image bool) []byte {
	b = append(b, `{"pid":`...)
	b = strconv.AppendUint(b, uint64(e.PID), 10)
	if !e.ExecID.IsZero() {
		b = append(b, `,"uid":"`...)
		b = appendExecID(b, e.ExecID)
		b = append(b, '"')
	}
	b = append(b, `,"name":`...)
	b = AppendJSONString(b, name)
	if image {
		b = append(b, `,"cmd_line":`...)
		b = appendCommandLine(b, e.Argv)
		b = append(b, `,"file":{"name":`...)
		b = AppendJSONString(b, path.Base(e.Filename))
		b = append(b, `,"path":`...)
		b = AppendJSONString(b, e.Filename)
		if e.Ret == 0 {
			b = append(b, `,"type_id":1,"type":"Regular File"}`...) // execve runs nothing else
		} else {
			b = append(b, `,"type_id":0,"type":"Unknown"}`...)
		}
	}
	b = appendOCSFUser(b, e)
	if e.AUID != vocab.UnsetID {
		b = append(b, `,"auid":`...)
		b = strconv.AppendUint(b, uint64(e.AUID), 10)
	}
	if !image && e.Exe != "" {
		// The caller's program (an exec's new one is file.path).
		b = append(b, `,"path":`...)
		b = AppendJSONString(b, e.Exe)
	}
	if e.Cwd != "" {
		b = append(b, `,"working_directory":`...)
		b = AppendJSONString(b, e.Cwd)
	}
	if e.Session != 0 && e.Session != vocab.UnsetID || e.TTY != "" {
		b = append(b, `,"session":{`...)
		sep := ""
		if e.Session != 0 && e.Session != vocab.UnsetID {
			b = append(b, `"uid":"`...)
			b = strconv.AppendUint(b, uint64(e.Session), 10)
			b = append(b, '"')
			sep = ","
		}
		if e.TTY != "" {
			b = append(b, sep...)
			b = append(b, `"terminal":`...)
			b = AppendJSONString(b, e.TTY)
		}
		b = append(b, '}')
	}
	ppid := int64(e.ParentExecID.PID)
	if e.Type == vocab.TypeExec && e.PPID != 0 {
		ppid = int64(e.PPID)
	}
	if ppid != 0 || !e.ParentExecID.IsZero() {
		pname := ""
		if len(e.Ancestors) > 0 && e.Ancestors[0].ExecID == e.ParentExecID {
			pname = e.Ancestors[0].Comm
		}
		b = append(b, `,"parent_process":`...)
		b = appendOCSFProcRef(b, ppid, pname, e.ParentExecID)
	}
	b = appendOCSFContainer(b, e) // pod.go
	if len(e.Ancestors) > 0 {
		b = append(b, `,"ancestry":[`...)
		for i := range e.Ancestors {
			a := &e.Ancestors[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = appendOCSFProcRef(b, int64(a.PID), a.Comm, a.ExecID)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendOCSFUser appends the process's user and group, the real ids,
// and the effective ones (the linux extension's euid, egid) where they
// differ.
func appendOCSFUser(b []byte, e *tracer.Event) []byte {
	b = append(b, `,"user":{"uid":"`...)
	b = strconv.AppendUint(b, uint64(e.UID), 10)
	if !e.HasCreds {
		return append(b, `"}`...)
	}
	b = append(b, `"},"group":{"uid":"`...)
	b = strconv.AppendUint(b, uint64(e.GID), 10)
	b = append(b, `"}`...)
	if e.EUID != e.UID {
		b = append(b, `,"euid":`...)
		b = strconv.AppendUint(b, uint64(e.EUID), 10)
	}
	if e.EGID != e.GID {
		b = append(b, `,"egid":`...)
		b = strconv.AppendUint(b, uint64(e.EGID), 10)
	}
	return b
}

// appendOCSFProcRef appends a process known by its pid, and its name and
// exec id where known.
func appendOCSFProcRef(b []byte, pid int64, name string, id tracer.ExecID) []byte {
	b = append(b, `{"pid":`...)
	b = strconv.AppendInt(b, pid, 10)
	if !id.IsZero() {
		b = append(b, `,"uid":"`...)
		b = appendExecID(b, id)
		b = append(b, '"')
	}
	if name != "" {
		b = append(b, `,"name":`...)
		b = AppendJSONString(b, name)
	}
	return append(b, '}')
}

// appendOCSFUnmapped appends unmapped: tracer's fields that OCSF has no
// attribute for, named as in the JSON lines.
func appendOCSFUnmapped(b []byte, e, raw *tracer.Event) []byte {
	b = append(b, `,"unmapped":{"type":"`...)
	b = append(b, e.Type.String()...)
	b = append(b, '"')
	b = appendOCSFCreds(b, e)
	b = appendCgroupUnit(b, e)
	b = appendPodExtra(b, e, true)
	switch e.Type {
	case vocab.TypeExec:
		// cmd_line is one string; the arguments as the process got them.
		if e.FilenameTruncated {
			b = append(b, `,"filename_truncated":true`...)
		}
		b = appendArgvJSON(b, e)
	case vocab.TypeFork:
		b = append(b, `,"syscall":`...)
		b = AppendJSONString(b, e.Syscall)
	case vocab.TypeSignal:
		b = appendOptString(b, `,"syscall":`, e.Syscall)
		b = appendECSSignal(b, e)
	case vocab.TypeExit:
		b = appendDeath(b, e)
	case vocab.TypeThrottle:
		b = appendThrottle(b, e)
	}
	if raw != nil {
		b = appendRawBase64(b, raw)
	}
	return append(b, '}')
}

// appendOCSFCreds appends the ids and audit fields OCSF has no attribute
// for: saved and file system ids where they differ from the real ones,
// and the audit key.
func appendOCSFCreds(b []byte, e *tracer.Event) []byte {
	for _, f := range [...]struct {
		name    string
		id, one uint32
	}{{`,"suid":`, e.SUID, e.UID}, {`,"fsuid":`, e.FSUID, e.UID}, {`,"sgid":`, e.SGID, e.GID}, {`,"fsgid":`, e.FSGID, e.GID}} {
		if e.HasCreds && f.id != f.one {
			b = append(b, f.name...)
			b = strconv.AppendUint(b, uint64(f.id), 10)
		}
	}
	return appendOptString(b, `,"key":`, e.Key)
}
