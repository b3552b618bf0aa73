// SPDX-License-Identifier: Apache-2.0

package auditstate

import "errors"

// EnabledLocked is the enabled value of a locked audit (auditctl -e 2).
const EnabledLocked = 2

// ErrLocked says that audit is locked: until reboot no rule can be added
// or removed and no setting changed. Callers add what the user can do.
var ErrLocked = errors.New("audit is locked (enabled 2, auditctl -e 2): no rule can be added until reboot")
