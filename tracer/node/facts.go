// Package node reads the facts of the running node that decide which backend
// can run and at what cost: OS release, kernel, audit state, eBPF features,
// 32-bit processes, the disk under the audit log. doctor prints them and
// bench records them in its result file.
package node

// Facts is what doctor reports and bench records (in progress: the doctor issue fills it).
type Facts struct {
	Hostname string `json:"hostname"`
	Kernel   string `json:"kernel"`
}

// Collect reads the facts of this node.
func Collect() (Facts, error) { return Facts{}, nil }
