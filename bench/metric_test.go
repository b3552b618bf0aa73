// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracer-dev/tracer/bench/result"
)

func readApp(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "apps", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

// The built-in parsers on outputs recorded from the Debian packages the
// application workloads use (redis-tools 7.0, apache2-utils 2.4,
// sysbench 1.0.20, stress-ng 0.15).
func TestAppMetrics(t *testing.T) {
	for _, tc := range []struct {
		file   string
		metric *Metric
		value  float64
		ops    int64
	}{
		// SET 47438.33/s and GET 36127.17/s, the same number of requests each.
		{"redis-benchmark.out", redisMetric(), 2 / (1/47438.33 + 1/36127.17), 0},
		{"ab.out", abMetric(), 7892.96, 0},
		{"sysbench-cpu.out", sysbenchMetric(), 2000 / 0.5846, 0},
		{"sysbench-threads.out", sysbenchMetric(), 2000 / 1.8904, 0},
		{"stress-ng-fork.out", stressMetric("fork"), 1373.06, 1000},
		{"stress-ng-vfork.out", stressMetric("vfork"), 12999.16, 1000},
		{"stress-ng-exec.out", stressMetric("exec"), 235.88, 40},
		// Not the "kill calls per sec" line that follows.
		{"stress-ng-kill.out", stressMetric("kill"), 11691.28, 1000},
		{"stress-ng-sigq.out", stressMetric("sigq"), 20492.31, 1000},
		{"stress-ng-clone.out", stressMetric("clone"), 154.20, 1000},
	} {
		r, err := tc.metric.Parse(readApp(t, tc.file))
		if err != nil {
			t.Errorf("%s: %v", tc.file, err)
			continue
		}
		if !near(r.Value, tc.value) || r.Ops != tc.ops {
			t.Errorf("%s: %s %v, ops %d; want %v, ops %d", tc.file, tc.metric.Name, r.Value, r.Ops, tc.value, tc.ops)
		}
		if !tc.metric.HigherIsBetter {
			t.Errorf("%s: %s is a throughput: higher is better", tc.file, tc.metric.Name)
		}
	}
}

// Each parser refuses another program's output rather than finding a
// figure in it, and a stressor's parser another stressor's line.
func TestAppMetricsRefuseOthers(t *testing.T) {
	for _, tc := range []struct {
		file   string
		metric *Metric
	}{
		{"ab.out", redisMetric()},
		{"redis-benchmark.out", abMetric()},
		{"ab.out", sysbenchMetric()},
		{"stress-ng-fork.out", stressMetric("vfork")},
		{"stress-ng-kill.out", stressMetric("sigq")},
		{"sysbench-cpu.out", stressMetric("cpu")},
	} {
		if r, err := tc.metric.Parse(readApp(t, tc.file)); err == nil {
			t.Errorf("%s read from %s: %v", tc.metric.Name, tc.file, r)
		}
	}
}

// ab-403.out is a run against an nginx whose workers could not read the
// file: 5000 answers of 403, fast, which must not count as a throughput.
func TestABFailedRequests(t *testing.T) {
	out := string(readApp(t, "ab.out"))
	failed := strings.Replace(out, "Failed requests:        0", "Failed requests:        12", 1)
	if failed == out {
		t.Fatal("recorded ab output changed: the test no longer edits it")
	}
	for _, bad := range []string{failed, string(readApp(t, "ab-403.out"))} {
		if r, err := abMetric().Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "ab:") {
			t.Errorf("ab output with failed requests gave %v, %v", r, err)
		}
	}
}

// --metric on the same recorded outputs, with the expressions a user
// would write.
func TestMetricFlag(t *testing.T) {
	for _, tc := range []struct {
		file, expr string
		name       string
		value      float64
	}{
		{"ab.out", `Requests per second:\s+([0-9.]+)`, "metric", 7892.96},
		{"ab.out", `Time per request:\s+(?P<ms_per_request>[0-9.]+) \[ms\] \(mean\)`, "ms_per_request", 2.027},
		// The last match: GET comes after SET.
		{"redis-benchmark.out", `([0-9.]+) requests per second`, "metric", 36127.17},
		{"redis-benchmark.out", `SET: ([0-9.]+) requests per second`, "metric", 47438.33},
		{"sysbench-cpu.out", `events per second:\s+([0-9.]+)`, "metric", 3415.22},
		{"sysbench-threads.out", `total time:\s+([0-9.]+)s`, "metric", 1.8904},
		{"stress-ng-fork.out", `fork\s+[0-9]+\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+(?P<bogo_ops_per_s>[0-9.]+)`, "bogo_ops_per_s", 1373.06},
	} {
		m, err := NewMetric(tc.expr, true)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		r, err := m.Parse(readApp(t, tc.file))
		if err != nil {
			t.Errorf("%s on %s: %v", tc.expr, tc.file, err)
			continue
		}
		if m.Name != tc.name || !near(r.Value, tc.value) {
			t.Errorf("%s on %s: %s = %v, want %s = %v", tc.expr, tc.file, m.Name, r.Value, tc.name, tc.value)
		}
	}
}

func TestMetricFlagErrors(t *testing.T) {
	for _, expr := range []string{`Requests per second`, `([0-9.]+`} {
		if _, err := NewMetric(expr, false); err == nil {
			t.Errorf("NewMetric(%q) accepted", expr)
		}
	}
	for _, tc := range []struct{ file, expr string }{
		{"sysbench-threads.out", `events per second:\s+([0-9.]+)`}, // threads prints no rate
		{"ab.out", `Failed requests:\s+([0-9]+)`},                  // 0: nothing measurable
		{"ab.out", `Server Software:\s+(\S+)`},                     // "nginx/1.22.1" is no number
	} {
		m, err := NewMetric(tc.expr, false)
		if err != nil {
			t.Fatal(err)
		}
		if r, err := m.Parse(readApp(t, tc.file)); err == nil {
			t.Errorf("%s on %s: %v, want an error", tc.expr, tc.file, r)
		}
	}
}

// The change against none is per round, as the elapsed ratio is: a figure
// 2% lower in every round is -2% whatever the drift between rounds, and
// its interval comes from RatioCI95.
func TestSummarizeMetric(t *testing.T) {
	m := stressMetric("fork")
	var base, mode []Sample
	for i, v := range []float64{1000, 1100, 900, 1050, 950} {
		base = append(base, Sample{Round: i + 1, Metric: v, Ops: 2000, Seen: -1})
		f := 0.98 + 0.002*float64(i%2)
		mode = append(mode, Sample{Round: i + 1, Metric: v * f, Ops: 2000, Seen: 2000 + int64(10*i)})
	}
	var r result.Row
	SummarizeMetric(&r, m, mode, base)
	ratios := roundRatiosOf(mode, base, func(s Sample) float64 { return s.Metric })
	lo, hi, _ := RatioCI95(ratios)
	if r.Metric != "bogo_ops_per_s" || !r.MetricHigherIsBetter || r.MetricChangePct == nil || *r.MetricChangePct != -2 ||
		len(r.MetricChangeCI95) != 2 || r.MetricChangeCI95[0] != changePct(lo) || r.MetricChangeCI95[1] != changePct(hi) ||
		r.MetricChangeCI95[0] >= -2 || r.MetricChangeCI95[1] <= -2 || r.MetricChangeCI95[1] >= 0 {
		t.Errorf("mode row: %s change %v, interval %v (ratio interval %v..%v)", r.Metric, r.MetricChangePct, r.MetricChangeCI95, lo, hi)
	}
	if r.MetricValue != Median([]float64{980, 1100 * 0.982, 900 * 0.98, 1050 * 0.982, 950 * 0.98}) {
		t.Errorf("metric value %v", r.MetricValue)
	}
	if r.Ops != 2000 || r.EventsPerOp == nil || *r.EventsPerOp != 1.01 {
		t.Errorf("ops %d, events per op %v; want 2000, 1.01", r.Ops, r.EventsPerOp)
	}
	var b result.Row
	SummarizeMetric(&b, m, base, nil)
	if b.MetricChangePct == nil || *b.MetricChangePct != 0 || b.EventsPerOp != nil || b.MetricValue != 1000 {
		t.Errorf("baseline row: change %v, events per op %v, value %v", b.MetricChangePct, b.EventsPerOp, b.MetricValue)
	}
	// Rounds none did not complete give no change.
	var o result.Row
	SummarizeMetric(&o, m, mode, []Sample{})
	if o.MetricChangePct != nil || o.MetricChangeCI95 != nil {
		t.Errorf("without a baseline: change %v, interval %v", o.MetricChangePct, o.MetricChangeCI95)
	}
}
