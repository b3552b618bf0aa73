package main

import (
	"context"

	"github.com/tracer-dev/tracer/tracer"
)

// startMetrics serves /metrics and /healthz on addr for the pipeline and backend
// (in progress: the metrics issue fills it). ready is called once probes or rules are in place.
func startMetrics(ctx context.Context, addr string, p *tracer.Pipeline, b tracer.Backend) (ready func(), err error) {
	return func() {}, nil
}
