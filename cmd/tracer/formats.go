// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"

	// The schemas pipelines speak (ecs, ocsf) register as --format values.
	"github.com/tracer-dev/tracer/tracer/sink"
)

// The schemas name the product that wrote each event, with its version.
func init() { sink.ProductVersion = version }

// formatList names watch's --format values for its help: "text, json,
// ecs or ocsf".
func formatList() string {
	names := sink.FormatNames()
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
