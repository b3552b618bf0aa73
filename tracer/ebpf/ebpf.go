//go:build linux

// Package ebpf is the eBPF backend (in progress).
package ebpf

import (
	"context"
	"errors"

	"github.com/tracer-dev/tracer/tracer"
)

// Backend is the eBPF backend.
type Backend struct{}

// New returns an eBPF backend.
func New() *Backend { return &Backend{} }

func (b *Backend) Name() string                                            { return "ebpf" }
func (b *Backend) Start(tracer.Config) error                               { return errors.New("ebpf backend not built yet") }
func (b *Backend) Run(ctx context.Context, emit func(*tracer.Event)) error { return nil }
func (b *Backend) Stats() tracer.Stats                                     { return tracer.Stats{} }
func (b *Backend) Close() error                                            { return nil }
