package tracer

import (
	"sync/atomic"
	"time"
)

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
