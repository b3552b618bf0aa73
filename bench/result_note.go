// SPDX-License-Identifier: Apache-2.0

package bench

// joinNote joins two parts of a note with "; ", either part maybe empty
// (the runner's notes on Linux, the summaries' everywhere).
func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "; " + b
}
