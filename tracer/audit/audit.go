//go:build linux

// Package audit is the Linux audit backend (in progress).
package audit

import (
	"context"
	"errors"

	"github.com/tracer-dev/tracer/tracer"
)

// Backend is the audit backend.
type Backend struct{}

// New returns an audit backend.
func New() *Backend { return &Backend{} }

func (b *Backend) Name() string                                            { return "audit" }
func (b *Backend) Start(tracer.Config) error                               { return errors.New("not built yet") }
func (b *Backend) Run(ctx context.Context, emit func(*tracer.Event)) error { return nil }
func (b *Backend) Stats() tracer.Stats                                     { return tracer.Stats{} }
func (b *Backend) Close() error                                            { return nil }
