// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"math/bits"
	"slices"
)

// digitPairs holds "00" to "99": two digits per division.
const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// pow10 holds 10^0 to 10^19.
var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// appendUint appends v in decimal, as strconv.AppendUint(b, v, 10) does,
// but writes the digits in place: strconv formats into a scratch array
// and copies, and its dozen numbers a line were a fifth of the JSON
// encoder's time.
func appendUint(b []byte, v uint64) []byte {
	n := decLen(v)
	b = slices.Grow(b, n)
	b = b[:len(b)+n]
	putUint(b, v)
	return b
}

// decLen is the number of decimal digits of v.
func decLen(v uint64) int {
	// log10(2) ~ 1233/4096: t is the digit count, or one less.
	t := bits.Len64(v|1) * 1233 >> 12
	if v|1 >= pow10[t] {
		t++
	}
	return t
}

// putUint writes the decimal digits of v to end where b ends; b holds at
// least decLen(v) bytes.
func putUint(b []byte, v uint64) {
	i := len(b)
	for v >= 100 {
		q := v / 100
		r := (v - q*100) * 2
		i -= 2
		b[i], b[i+1] = digitPairs[r], digitPairs[r+1]
		v = q
	}
	if v >= 10 {
		b[i-2], b[i-1] = digitPairs[2*v], digitPairs[2*v+1]
	} else {
		b[i-1] = byte('0' + v)
	}
}

// appendInt is strconv.AppendInt(b, v, 10), as appendUint.
func appendInt(b []byte, v int64) []byte {
	if v < 0 {
		// -v overflows for the smallest int64, whose uint64 is still right.
		return appendUint(append(b, '-'), uint64(-v))
	}
	return appendUint(b, uint64(v))
}
