// SPDX-License-Identifier: Apache-2.0

package auparse

import "strings"

// keySeparator joins a rule's keys in the kernel's one key field
// (AUDIT_KEY_SEPARATOR).
const keySeparator = "\x01"

// RuleKey reads the key of a rule in auditctl text: "-k K", "-F key=K" or
// "key=K", quoted or not. auditctl -l prints a rule of several keys as
// one -F key= (or -k, for a watch) per key, go-libaudit as one field with
// the keys joined by \x01; either reads as the kernel holds it, the keys
// joined by \x01. ok is false when the rule has no key.
func RuleKey(text string) (key string, ok bool) {
	var keys []string
	f := strings.Fields(text)
	for i := 0; i < len(f); i++ {
		w := f[i]
		if w == "-k" && i+1 < len(f) {
			i++
			keys = append(keys, strings.Trim(f[i], `"`))
			continue
		}
		if k, found := strings.CutPrefix(w, "key="); found {
			keys = append(keys, strings.Trim(k, `"`))
		}
	}
	if len(keys) == 0 {
		return "", false
	}
	return strings.Join(keys, keySeparator), true
}
