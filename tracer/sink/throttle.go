// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"strconv"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// appendThrottleJSON appends a throttle event's own fields (docs/events.md):
// `"source":"cgroup","cgroup_id":N,"window_start":T,"window_end":T,
// "limit":N,"suppressed":N,"suppressed_by_type":{"exec":N,...}`.
func appendThrottleJSON(b []byte, e *tracer.Event) []byte {
	t := &e.Throttle
	b = append(b, `,"source":`...)
	b = appendString(b, t.Source.String())
	if t.CgroupID != 0 {
		b = append(b, `,"cgroup_id":`...)
		b = appendUint(b, t.CgroupID)
	}
	b = append(b, `,"window_start":"`...)
	b = appendRFC3339Nano(b, t.Start)
	b = append(b, `","window_end":"`...)
	b = appendRFC3339Nano(b, t.End)
	b = append(b, `","limit":`...)
	b = appendUint(b, uint64(t.Limit))
	return appendSuppressed(b, t)
}

// appendSuppressed appends suppressed and suppressed_by_type, the events
// the throttle left out, all and by type.
func appendSuppressed(b []byte, t *tracer.Throttle) []byte {
	b = append(b, `,"suppressed":`...)
	b = appendUint(b, t.Suppressed())
	b = append(b, `,"suppressed_by_type":{`...)
	for i, typ := range vocab.AllTypes {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, typ.String()...)
		b = append(b, `":`...)
		b = appendUint(b, t.Of(typ))
	}
	return append(b, '}')
}

// appendThrottleText appends a throttle event in words: "cgroup
// /kubepods/x: 1998000 events over 1000/s left out (signal 1998000) in
// 12:00:01.000-12:00:02.000", or "process: ..." for a process source.
func appendThrottleText(b []byte, e *tracer.Event) []byte {
	t := &e.Throttle
	b = append(b, t.Source.String()...)
	if t.Source == tracer.SourceCgroup {
		b = append(b, ' ')
		if e.Cgroup != "" {
			b = appendField(b, e.Cgroup)
		} else {
			b = append(b, "id="...)
			b = strconv.AppendUint(b, t.CgroupID, 10)
		}
	}
	b = append(b, ": "...)
	b = strconv.AppendUint(b, t.Suppressed(), 10)
	b = append(b, " events over "...)
	b = strconv.AppendUint(b, uint64(t.Limit), 10)
	b = append(b, "/s left out ("...)
	sep := ""
	for _, typ := range vocab.AllTypes {
		if n := t.Of(typ); n != 0 {
			b = append(b, sep...)
			b = append(b, typ.String()...)
			b = append(b, ' ')
			b = strconv.AppendUint(b, n, 10)
			sep = ", "
		}
	}
	b = append(b, ") in "...)
	b = t.Start.Local().AppendFormat(b, "15:04:05.000")
	b = append(b, '-')
	return t.End.Local().AppendFormat(b, "15:04:05.000")
}

func sameThrottle(a, b *tracer.Throttle) bool {
	return a.Source == b.Source && a.CgroupID == b.CgroupID && a.Start.Equal(b.Start) && a.End.Equal(b.End) &&
		a.Limit == b.Limit && a.Exec == b.Exec && a.Fork == b.Fork && a.Signal == b.Signal && a.Exit == b.Exit
}
