//go:build linux

package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	libaudit "github.com/elastic/go-libaudit/v2"
)

// StateDir holds one file per running audit backend with the kernel
// settings it changed, so that `tracer cleanup` can restore them after a
// tracer was killed with SIGKILL and could not.
var StateDir = "/run/tracer"

// savedState is what a backend changed and must give back.
type savedState struct {
	PID          int     `json:"pid"`
	Enabled      *uint32 `json:"enabled_before,omitempty"`
	BacklogLimit *uint32 `json:"backlog_limit_before,omitempty"`
}

func statePath(pid int) string {
	return filepath.Join(StateDir, "audit-"+strconv.Itoa(pid)+".json")
}

func (s *savedState) write() error {
	if err := os.MkdirAll(StateDir, 0o700); err != nil {
		return fmt.Errorf("creating state dir: %w", err)
	}
	b, _ := json.Marshal(s)
	if err := os.WriteFile(statePath(s.PID), b, 0o600); err != nil {
		return fmt.Errorf("writing audit state file: %w", err)
	}
	return nil
}

func removeState(pid int) { _ = os.Remove(statePath(pid)) }

// restoreLeftSettings gives back the settings of backends whose process is
// gone, and returns what it did.
func restoreLeftSettings(c *libaudit.AuditClient) ([]string, error) {
	files, _ := filepath.Glob(filepath.Join(StateDir, "audit-*.json"))
	var done []string
	var errs []error
	for _, f := range files {
		var s savedState
		b, err := os.ReadFile(f)
		if err != nil || json.Unmarshal(b, &s) != nil {
			continue
		}
		if s.PID != os.Getpid() && processAlive(s.PID) && isTracer(s.PID) {
			continue // still running: it will restore its own
		}
		if s.BacklogLimit != nil {
			if err := c.SetBacklogLimit(*s.BacklogLimit, libaudit.WaitForReply); err != nil {
				errs = append(errs, fmt.Errorf("restoring backlog limit: %w", err))
			} else {
				done = append(done, fmt.Sprintf("restored backlog_limit %d (changed by killed tracer pid %d)", *s.BacklogLimit, s.PID))
			}
		}
		if s.Enabled != nil {
			if err := c.SetEnabled(*s.Enabled == 1, libaudit.WaitForReply); err != nil {
				errs = append(errs, fmt.Errorf("restoring audit enabled flag: %w", err))
			} else {
				done = append(done, fmt.Sprintf("restored enabled=%d (changed by killed tracer pid %d)", *s.Enabled, s.PID))
			}
		}
		_ = os.Remove(f)
	}
	return done, errors.Join(errs...)
}

func isTracer(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), "tracer")
}
