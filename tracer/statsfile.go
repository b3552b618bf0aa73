// SPDX-License-Identifier: Apache-2.0

package tracer

import (
	"time"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// StatsFile is what `watch --stats-file` writes when it exits: the figures
// of the summary line, for programs (bench reads it instead of parsing the
// line). Stages and types are named as in the metrics.
type StatsFile struct {
	Backend string `json:"backend"`
	// EventsSeen is what passed the filters, by type and in all.
	EventsSeen   uint64            `json:"events_seen"`
	EventsByType map[string]uint64 `json:"events_by_type"`
	// Lost is by stage; a stage in LostLowerBound is only a lower bound.
	LostTotal      uint64            `json:"lost_total"`
	Lost           map[string]uint64 `json:"lost"`
	LostLowerBound []string          `json:"lost_lower_bound,omitempty"`
	// Filtered is the runtime noise left out, by reason: not loss.
	FilteredTotal uint64            `json:"filtered_total"`
	Filtered      map[string]uint64 `json:"filtered"`
	// Throttled is what --rate-limit left out, by type: not loss; the
	// throttle events (ThrottleEvents of them) say whose it was.
	ThrottledTotal uint64            `json:"throttled_total"`
	Throttled      map[string]uint64 `json:"throttled"`
	ThrottleEvents uint64            `json:"throttle_events"`
	// OutputRotationsFailed is the rotations of --output FILE that
	// failed; the events FILE could not take meanwhile are in Lost.
	OutputRotationsFailed uint64 `json:"output_rotations_failed"`
	// DelayP99Ms is the 99th percentile of the time from an event's kernel
	// timestamp to its hand-over to the output, in milliseconds (1 ms
	// buckets, rounded up; absent when no event was timed). The kernel
	// time is the scheduler tick's, up to a tick early.
	DelayP99Ms *float64 `json:"delay_p99_ms,omitempty"`
}

// NewStatsFile gathers a pipeline's final figures.
func NewStatsFile(p *Pipeline, b Backend) StatsFile {
	st := p.Stats(b)
	f := StatsFile{
		Backend: b.Name(), EventsSeen: p.TotalEmitted(), LostTotal: st.TotalLost(),
		EventsByType: map[string]uint64{}, Lost: map[string]uint64{},
		FilteredTotal: st.TotalFiltered(), Filtered: map[string]uint64{},
		ThrottledTotal: st.TotalThrottled(), Throttled: map[string]uint64{}, ThrottleEvents: p.Emitted(vocab.TypeThrottle),
		OutputRotationsFailed: st.RotationsFailed,
	}
	if p.Delay.Count() > 0 {
		ms := float64(p.Delay.Quantile(0.99)) / float64(time.Millisecond)
		f.DelayP99Ms = &ms
	}
	for r := vocab.FilterReason(0); r < vocab.NumFilterReasons; r++ {
		f.Filtered[r.String()] = st.Filtered[r]
	}
	for _, t := range vocab.AllTypes {
		f.EventsByType[t.String()] = p.Emitted(t)
		f.Throttled[t.String()] = st.Throttled[t]
	}
	for s := LossStage(0); s < NumLossStages; s++ {
		f.Lost[s.String()] = st.Lost[s]
		if st.LowerBound[s] {
			f.LostLowerBound = append(f.LostLowerBound, s.String())
		}
	}
	return f
}
