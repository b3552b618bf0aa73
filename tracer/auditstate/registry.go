// SPDX-License-Identifier: Apache-2.0

package auditstate

import "strconv"

// Registration is a running tracer's entry in a state directory: one file
// per process, RegistrationFile(pid), and the one pid+start registry both
// watching tracers (who leave each other's events out) and the audit
// backend (whose rules and settings `tracer cleanup` undoes when it is gone)
// use. A process that is not PID started at Start is not the tracer: a
// later process that reuses the pid of a killed one is not mistaken for it.
type Registration struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start_time"` // /proc/PID/stat field 22
	// Watch: a watching tracer, whose events the others leave out.
	Watch bool `json:"watch,omitempty"`
	// Key is the audit backend's instance key while it runs: its rules
	// carry it. Empty: no audit backend in this process.
	Key string `json:"key,omitempty"`
	// Port is the netlink port of the audit backend's multicast socket:
	// the readers of the audit multicast group that are tracers.
	Port uint32 `json:"port,omitempty"`
	// Signals: the audit backend watches signal events, so no tracer
	// excludes OBJ_PID records while it runs.
	Signals bool `json:"signals,omitempty"`

	file string // the file it was read from
}

// RegistrationFile is the name of pid's registration in a state directory.
func RegistrationFile(pid int) string { return "tracer-" + strconv.Itoa(pid) + ".json" }

// File is the name of the file r was read from (an earlier version's
// peer-PID.json or audit-PID.json included).
func (r Registration) File() string {
	if r.file == "" {
		return RegistrationFile(r.PID)
	}
	return r.file
}

func (r Registration) empty() bool { return !r.Watch && r.Key == "" }
