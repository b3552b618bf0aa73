// SPDX-License-Identifier: Apache-2.0

package audit

import (
	"bytes"
	"encoding/hex"
)

// keyMatch reports whether a SYSCALL record body carries one of keys. It
// runs before the record is parsed: the kernel writes key= last
// (audit_log_key), quoted, "(null)" for none, or hex when the rule has
// several keys (joined by 0x01).
func keyMatch(body []byte, keys [][]byte) bool {
	i := bytes.LastIndex(body, []byte(" key="))
	if i < 0 {
		return false
	}
	v := body[i+len(" key="):]
	if j := bytes.IndexByte(v, ' '); j >= 0 {
		v = v[:j]
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
		for _, k := range keys {
			if bytes.Equal(v, k) {
				return true
			}
		}
		return false
	}
	if len(v) == 0 || v[0] == '(' || len(v)%2 != 0 || len(v) > 2*512 {
		return false // (null): no key
	}
	var buf [512]byte
	n, err := hex.Decode(buf[:], v)
	if err != nil {
		return false
	}
	for part := range bytes.SplitSeq(buf[:n], []byte{1}) {
		for _, k := range keys {
			if bytes.Equal(part, k) {
				return true
			}
		}
	}
	return false
}
