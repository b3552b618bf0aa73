// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"strconv"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// appendRet appends a syscall's return value as text shows it: 0, the
// errno's name for -errno (ENOENT), else the number.
func appendRet(b []byte, ret int64) []byte {
	if name := vocab.ErrnoName(-ret); name != "" {
		return append(b, name...)
	}
	return strconv.AppendInt(b, ret, 10)
}
