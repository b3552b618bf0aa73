// SPDX-License-Identifier: Apache-2.0

package sink

// FormatEncoder returns the Encoder of a --format value, for sinks that
// carry one line per event in a message of their own (syslog): text (the
// line after its clock time, the message having a time of its own), json,
// or a registered format.
func FormatEncoder(name string) (Encoder, bool) {
	switch name {
	case "text", "":
		return appendTextBody, true
	case "json":
		return AppendJSON, true
	}
	enc, ok := formats[name]
	return enc, ok
}
