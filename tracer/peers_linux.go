package tracer

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
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
	pid := uint32(os.Getpid())
	start, _ := ReadStartTicks(pid)
	b, _ := json.Marshal(peer{PID: pid, Start: start})
	name := peerPrefix + strconv.Itoa(int(pid)) + ".json"
	if err := WriteStateFile(dir, name, b); err != nil {
		return nil, fmt.Errorf("registering in %s: %w", dir, err)
	}
	return func() { _ = os.Remove(dir + "/" + name) }, nil
}

// RefreshPeers reads the tracers registered in dir, other than this
// process and still running, into p; registrations of tracers that are
// gone are removed.
func RefreshPeers(dir string, p *Peers) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	self := uint32(os.Getpid())
	var pids []uint32
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, peerPrefix) || !strings.HasSuffix(name, ".json") {
			continue
		}
		b, err := ReadStateFile(dir, name)
		if err != nil {
			continue
		}
		var pr peer
		if json.Unmarshal(b, &pr) != nil || pr.PID == 0 || pr.PID == self {
			continue
		}
		if start, ok := ReadStartTicks(pr.PID); !ok || start != pr.Start {
			_ = os.Remove(dir + "/" + name)
			continue
		}
		pids = append(pids, pr.PID)
	}
	p.Set(pids)
}
