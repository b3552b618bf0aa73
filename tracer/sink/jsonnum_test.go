// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"math"
	"strconv"
	"testing"
)

func checkAppendInt(t *testing.T, v int64) {
	t.Helper()
	if got, want := string(appendUint([]byte("x"), uint64(v))), "x"+strconv.FormatUint(uint64(v), 10); got != want {
		t.Errorf("appendUint(%d) = %s, want %s", uint64(v), got, want)
	}
	if got, want := string(appendInt([]byte("x"), v)), "x"+strconv.FormatInt(v, 10); got != want {
		t.Errorf("appendInt(%d) = %s, want %s", v, got, want)
	}
}

func TestAppendIntMatchesStrconv(t *testing.T) {
	for _, v := range []int64{0, 1, 9, 10, 99, 100, math.MaxInt32, math.MaxUint32, math.MaxInt64, math.MinInt64, -1} {
		checkAppendInt(t, v)
	}
	// Each power of ten and its neighbours, where the digit count changes.
	for p := uint64(1); p <= 1e19; p *= 10 {
		for _, v := range []uint64{p - 1, p, p + 1} {
			checkAppendInt(t, int64(v))
			checkAppendInt(t, -int64(v))
		}
		if p == 1e19 {
			break
		}
	}
}

func FuzzAppendIntMatchesStrconv(f *testing.F) {
	f.Add(int64(4242))
	f.Fuzz(checkAppendInt)
}
