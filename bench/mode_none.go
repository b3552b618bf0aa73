// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import "context"

// baseline is the mode that every ratio is to: nothing watches.
const baseline = "none"

func init() {
	registerMode(modeSpec{name: baseline, rank: 0, inDefault: true, inQuick: true, color: "#7a8ca3",
		watches: "nothing: the baseline", countedFrom: "--",
		make: func(modeEnv) (Mode, error) { return noneMode{}, nil }})
}

// noneMode is the baseline: nothing watches.
type noneMode struct{}

func (noneMode) Name() string                                    { return baseline }
func (noneMode) WritesLog() bool                                 { return false }
func (noneMode) Setup(context.Context) error                     { return nil }
func (noneMode) Start(context.Context, *Run) error               { return nil }
func (noneMode) Teardown() error                                 { return nil }
func (noneMode) Stop(context.Context, *Run) (Observation, error) { return Observation{Seen: -1}, nil }
