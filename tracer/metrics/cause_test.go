// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

func TestCauseSink(t *testing.T) {
	s := NewCauseSink()
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	for _, e := range []tracer.Event{
		{Type: vocab.TypeSignal, Signal: 15, Syscall: "kill", Origin: vocab.OriginUser},
		{Type: vocab.TypeSignal, Signal: 15, Syscall: "kill", Origin: vocab.OriginUser},
		{Type: vocab.TypeSignal, Signal: 11, Origin: vocab.OriginKernel},
		{Type: vocab.TypeSignal, Signal: 99}, // out of range: not counted
		{Type: vocab.TypeExit, ExitCode: 3},
		{Type: vocab.TypeExit, Signal: 9, OOMKill: true},
		{Type: vocab.TypeExit, Signal: 11, CoreDumped: true},
		{Type: vocab.TypeExit, Signal: 15},
		{Type: vocab.TypeExit, Signal: 15},
		{Type: vocab.TypeExec},
	} {
		if err := s.Write(&e); err != nil {
			t.Fatal(err)
		}
	}
	got := values(t, reg, "tracer_")
	want := map[string]float64{
		`tracer_signals_total{origin="user",signal="SIGTERM"}`:   2,
		`tracer_signals_total{origin="kernel",signal="SIGSEGV"}`: 1,
		`tracer_exits_total{cause="exit"}`:                       1,
		`tracer_exits_total{cause="signal"}`:                     2,
		`tracer_exits_total{cause="oom"}`:                        1,
		`tracer_exits_total{cause="core"}`:                       1,
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}
