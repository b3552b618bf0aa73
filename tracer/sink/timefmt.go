// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// TimeMode is how text output shows an event's time (--time).
type TimeMode uint8

// Time modes.
const (
	TimeClock    TimeMode = iota // local time of day, ms: 15:04:05.000
	TimeISO                      // local date and time, ms, with the offset: RFC 3339
	TimeRelative                 // seconds since the watch started
	TimeNone                     // no time column
)

// TimeModes are the --time values, in TimeMode order.
var TimeModes = []string{"clock", "iso", "relative", "none"}

// ParseTimeMode reads a --time value.
func ParseTimeMode(s string) (TimeMode, error) {
	for i, m := range TimeModes {
		if strings.EqualFold(s, m) {
			return TimeMode(i), nil
		}
	}
	return 0, vocab.Usagef("unknown --time %q: use %s", s, strings.Join(TimeModes, ", "))
}

// isoMilli is --time iso: RFC 3339 with milliseconds and a numeric
// offset, so that every line has the same width.
const isoMilli = "2006-01-02T15:04:05.000-07:00"

// width is the time column's width, without the space after it.
func (m TimeMode) width() int {
	switch m {
	case TimeISO:
		return len(isoMilli)
	case TimeNone:
		return 0
	}
	return len("15:04:05.000")
}

// header is the time column's header and the space after it.
func (m TimeMode) header() string {
	name := "TIME"
	switch m {
	case TimeNone:
		return ""
	case TimeRelative:
		name = "TIME(s)"
	}
	return string(appendPad([]byte(name), m.width()+1-len(name)))
}

// appendTime appends t's time column and the space after it.
func (m TimeMode) appendTime(b []byte, t, start time.Time) []byte {
	switch m {
	case TimeISO:
		b = t.Local().AppendFormat(b, isoMilli)
	case TimeRelative:
		// Right-aligned, so that the seconds line up.
		var d [24]byte
		num := strconv.AppendFloat(d[:0], max(t.Sub(start).Seconds(), 0), 'f', 3, 64)
		b = append(appendPad(b, m.width()-len(num)), num...)
	case TimeNone:
		return b
	default:
		b = t.Local().AppendFormat(b, "15:04:05.000")
	}
	return append(b, ' ')
}

// secondPrefix caches "2006-01-02T15:04:05" of the last second formatted:
// events come in bursts within one second, and formatting the date is most
// of time.AppendFormat's cost on the JSON hot path.
type secondPrefix struct {
	unix   int64
	prefix [19]byte
}

var lastSecond atomic.Pointer[secondPrefix]

// appendRFC3339Nano appends t in UTC exactly as
// t.UTC().AppendFormat(b, time.RFC3339Nano) does.
func appendRFC3339Nano(b []byte, t time.Time) []byte {
	t = t.UTC()
	sec := t.Unix()
	p := lastSecond.Load()
	if p == nil || p.unix != sec {
		p = &secondPrefix{unix: sec}
		t.AppendFormat(p.prefix[:0], "2006-01-02T15:04:05")
		lastSecond.Store(p)
	}
	b = append(b, p.prefix[:]...)
	if ns := t.Nanosecond(); ns != 0 {
		var d [10]byte
		d[0] = '.'
		for i := 9; i >= 1; i-- {
			d[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for d[n-1] == '0' {
			n--
		}
		b = append(b, d[:n]...)
	}
	return append(b, 'Z')
}
