package main

import (
	"strings"

	"github.com/tracer-dev/tracer/tracer"
	// The schemas pipelines speak (ecs, ocsf) register as --format values.
	_ "github.com/tracer-dev/tracer/tracer/sink"
)

// formatList names watch's --format values for its help: "text, json,
// ecs or ocsf".
func formatList() string {
	names := tracer.FormatNames()
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
