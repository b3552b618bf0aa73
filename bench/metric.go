// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// Metric is a workload's own figure, read from what it prints: a server
// benchmark's requests per second, stress-ng's bogo ops per second. Elapsed
// time says what watching costs a loop; an application's throughput says
// what it costs the application, the figure its owner judges it by.
type Metric struct {
	// Name is how result files name the figure: requests_per_s,
	// events_per_s, bogo_ops_per_s, or a --metric capture group's name.
	Name string
	// Unit is how tables show it: requests/s.
	Unit string
	// HigherIsBetter holds for throughputs: a lower figure under a mode is
	// its cost. Otherwise (latencies, durations) a higher one is.
	HigherIsBetter bool
	parse          func(out []byte) (Reading, error)
}

// Reading is what one run's output said.
type Reading struct {
	Value float64
	// Ops is how many operations the workload says it did (stress-ng's
	// bogo ops), 0 when it does not say.
	Ops int64
}

// Parse reads the figure from a run's output (stdout and stderr).
func (m *Metric) Parse(out []byte) (Reading, error) {
	r, err := m.parse(out)
	if err != nil {
		return r, err
	}
	if math.IsNaN(r.Value) || math.IsInf(r.Value, 0) || r.Value <= 0 {
		return r, fmt.Errorf("%s is %v: a run that did nothing measurable", m.Name, r.Value)
	}
	return r, nil
}

// NewMetric makes the metric of a command given after --: expr is a
// regular expression whose first capture group matches a number in the
// command's output (the last match counts, as benchmarks print their
// summary last). A named group names the figure in results; otherwise it is
// "metric". Errors are usage errors.
func NewMetric(expr string, higherIsBetter bool) (*Metric, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, vocab.Usagef("--metric %q is not a regular expression: %v", expr, err)
	}
	if re.NumSubexp() < 1 {
		return nil, vocab.Usagef(`--metric %q has no capture group: put the number in parentheses, e.g. 'Requests per second:\s+([0-9.]+)'`, expr)
	}
	name := "metric"
	if n := re.SubexpNames()[1]; n != "" {
		name = n
	}
	m := &Metric{Name: name, Unit: name, HigherIsBetter: higherIsBetter}
	m.parse = func(out []byte) (Reading, error) {
		all := re.FindAllSubmatch(out, -1)
		if len(all) == 0 {
			return Reading{}, fmt.Errorf("--metric %q matched nothing in the output", expr)
		}
		last := all[len(all)-1]
		v, err := parseNumber(string(last[1]))
		if err != nil {
			return Reading{}, fmt.Errorf("--metric %q: capture %q is not a number", expr, last[1])
		}
		return Reading{Value: v}, nil
	}
	return m, nil
}

func parseNumber(s string) (float64, error) {
	return strconv.ParseFloat(strings.TrimSpace(s), 64)
}

// redis-benchmark -q ends each test with "GET: 36127.17 requests per
// second, p50=..." (its progress lines, "rps=...", are overwritten by \r).
var redisRe = regexp.MustCompile(`([A-Z][A-Z_ ()0-9]*): ([0-9.]+) requests per second`)

// redisMetric is the requests per second of all the tests redis-benchmark
// ran: each runs the same number of requests, so the overall rate is the
// harmonic mean of theirs.
func redisMetric() *Metric {
	return &Metric{Name: "requests_per_s", Unit: "requests/s", HigherIsBetter: true,
		parse: func(out []byte) (Reading, error) {
			all := redisRe.FindAllSubmatch(out, -1)
			if len(all) == 0 {
				return Reading{}, fmt.Errorf("no \"requests per second\" line in redis-benchmark's output")
			}
			inv := 0.0
			for _, m := range all {
				v, err := parseNumber(string(m[2]))
				if err != nil || v <= 0 {
					return Reading{}, fmt.Errorf("redis-benchmark: %s: %q is not a rate", m[1], m[2])
				}
				inv += 1 / v
			}
			return Reading{Value: float64(len(all)) / inv}, nil
		}}
}

var (
	abRateRe   = regexp.MustCompile(`(?m)^Requests per second:\s+([0-9.]+)`)
	abFailedRe = regexp.MustCompile(`(?m)^(Failed requests|Non-2xx responses|Write errors):\s+([0-9]+)`)
)

// abMetric is ab's requests per second; a run with failed or non-2xx
// requests measured something other than serving the file, so it fails.
func abMetric() *Metric {
	return &Metric{Name: "requests_per_s", Unit: "requests/s", HigherIsBetter: true,
		parse: func(out []byte) (Reading, error) {
			for _, m := range abFailedRe.FindAllSubmatch(out, -1) {
				if string(m[2]) != "0" {
					return Reading{}, fmt.Errorf("ab: %s: %s", m[1], m[2])
				}
			}
			m := abRateRe.FindSubmatch(out)
			if m == nil {
				return Reading{}, fmt.Errorf("no \"Requests per second\" line in ab's output")
			}
			v, err := parseNumber(string(m[1]))
			return Reading{Value: v}, err
		}}
}

var (
	sysbenchEventsRe = regexp.MustCompile(`total number of events:\s+([0-9]+)`)
	sysbenchTimeRe   = regexp.MustCompile(`total time:\s+([0-9.]+)s`)
)

// sysbenchMetric is events over total time: sysbench prints "events per
// second" for cpu but not for threads, and both print these two.
func sysbenchMetric() *Metric {
	return &Metric{Name: "events_per_s", Unit: "events/s", HigherIsBetter: true,
		parse: func(out []byte) (Reading, error) {
			e, t := sysbenchEventsRe.FindSubmatch(out), sysbenchTimeRe.FindSubmatch(out)
			if e == nil || t == nil {
				return Reading{}, fmt.Errorf("no \"total number of events\" and \"total time\" in sysbench's output")
			}
			n, err1 := strconv.ParseInt(string(e[1]), 10, 64)
			sec, err2 := parseNumber(string(t[1]))
			if err1 != nil || err2 != nil || sec <= 0 {
				return Reading{}, fmt.Errorf("sysbench: %d events in %q seconds", n, t[1])
			}
			return Reading{Value: float64(n) / sec}, nil
		}}
}

// stressMetric reads stress-ng --metrics-brief's line for stressor:
// "stressor bogo-ops real-time usr-time sys-time ops/s(real) ops/s(usr+sys)".
// The figure is bogo ops per second of real time; Ops the bogo ops, which
// the events a mode saw are compared with.
func stressMetric(stressor string) *Metric {
	re := regexp.MustCompile(`(?m)\] ` + regexp.QuoteMeta(stressor) + `\s+([0-9]+)\s+([0-9.]+)\s+[0-9.]+\s+[0-9.]+\s+([0-9.]+)`)
	return &Metric{Name: "bogo_ops_per_s", Unit: "bogo ops/s", HigherIsBetter: true,
		parse: func(out []byte) (Reading, error) {
			m := re.FindSubmatch(out)
			if m == nil {
				return Reading{}, fmt.Errorf("no %s line in stress-ng's metrics", stressor)
			}
			ops, err1 := strconv.ParseInt(string(m[1]), 10, 64)
			v, err2 := parseNumber(string(m[3]))
			if err1 != nil || err2 != nil {
				return Reading{}, fmt.Errorf("stress-ng %s: %q bogo ops at %q a second", stressor, m[1], m[3])
			}
			return Reading{Value: v, Ops: ops}, nil
		}}
}
