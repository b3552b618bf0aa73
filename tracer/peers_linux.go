// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/tracer-dev/tracer/tracer/auditstate"
	"github.com/tracer-dev/tracer/tracer/host"
)

// peer is a running tracer's registration: pid and start time (a later
// process that reuses the pid of a killed tracer is not one).
type peer struct {
	PID   uint32 `json:"pid"`
	Start uint64 `json:"start_time"`
}

const peerPrefix = "peer-"

// RegisterPeer records this process in state directory dir as a running
// tracer, for the others' RefreshPeers; the returned func takes it back.
func RegisterPeer(dir string) (unregister func(), err error) {
	d, err := auditstate.OpenStateDir(dir) // makes it where it is missing
	if err != nil {
		return nil, err
	}
	d.Close()
	pid := uint32(os.Getpid())
	start, _ := host.ReadStartTicks(pid)
	b, _ := json.Marshal(peer{PID: pid, Start: start})
	name := peerPrefix + strconv.Itoa(int(pid)) + ".json"
	if err := auditstate.WriteStateFile(dir, name, b); err != nil {
		return nil, fmt.Errorf("registering in %s: %w", dir, err)
	}
	return func() { _ = os.Remove(dir + "/" + name) }, nil
}

// RefreshPeers reads the tracers registered in dir, other than this
// process and still running, into p; registrations of tracers that are
// gone are removed.
func RefreshPeers(dir string, p *Peers) {
	pids, _ := livePeers(dir)
	p.Set(pids)
}

// RemoveStalePeers removes the registrations of tracers that are gone
// (killed with SIGKILL, say), for `tracer cleanup`, and says what it did.
func RemoveStalePeers(dir string) []string {
	_, removed := livePeers(dir)
	var done []string
	for _, pid := range removed {
		done = append(done, fmt.Sprintf("removed the registration of tracer pid %d, which is gone", pid))
	}
	return done
}

// livePeers lists the registered tracers other than this process that
// run, and removes, and returns, those that are gone.
func livePeers(dir string) (pids, removed []uint32) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil
	}
	self := uint32(os.Getpid())
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, peerPrefix) || !strings.HasSuffix(name, ".json") {
			continue
		}
		b, err := auditstate.ReadStateFile(dir, name)
		if err != nil {
			continue
		}
		var pr peer
		if json.Unmarshal(b, &pr) != nil || pr.PID == 0 || pr.PID == self {
			continue
		}
		if start, ok := host.ReadStartTicks(pr.PID); !ok || start != pr.Start {
			if os.Remove(dir+"/"+name) == nil {
				removed = append(removed, pr.PID)
			}
			continue
		}
		pids = append(pids, pr.PID)
	}
	return pids, removed
}
