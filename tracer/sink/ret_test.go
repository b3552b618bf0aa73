// SPDX-License-Identifier: Apache-2.0

package sink

import "testing"

// A return value prints as its errno's name, other values as numbers.
func TestAppendRet(t *testing.T) {
	if got := string(appendRet(nil, -2)); got != "ENOENT" {
		t.Errorf("appendRet(-2) = %q, want ENOENT", got)
	}
	for ret, want := range map[int64]string{0: "0", 3: "3", -4095: "-4095"} {
		if got := string(appendRet(nil, ret)); got != want {
			t.Errorf("appendRet(%d) = %q, want %q", ret, got, want)
		}
	}
}
