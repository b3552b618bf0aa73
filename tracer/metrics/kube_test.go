// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"io"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/sink"
)

type fakePods struct{ st tracer.PodStats }

func (f *fakePods) Pod(string) (tracer.PodInfo, bool) { return tracer.PodInfo{}, false }
func (f *fakePods) PodStats() tracer.PodStats         { return f.st }

// TestKubernetesMetrics: with --kubernetes the misses, errors and known
// containers are exported; without, none of them.
func TestKubernetesMetrics(t *testing.T) {
	p := tracer.NewPipeline(tracer.DefaultConfig(), sink.NewJSONSink(io.Discard))
	b := &fakeBackend{name: "ebpf"}
	s, err := New(p, b, Options{Version: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	if got := values(t, s.Registry(), "tracer_kubernetes_"); len(got) != 0 {
		t.Errorf("without --kubernetes: %v", got)
	}
	p.Pods = &fakePods{st: tracer.PodStats{Misses: 7, Errors: 2, Containers: 30}}
	diffValues(t, values(t, s.Registry(), "tracer_kubernetes_"), map[string]float64{
		"tracer_kubernetes_misses_total{}": 7, "tracer_kubernetes_errors_total{}": 2, "tracer_kubernetes_containers{}": 30,
	})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(p, b, "dev"))
	if _, err := reg.Gather(); err != nil {
		t.Error(err)
	}
}
