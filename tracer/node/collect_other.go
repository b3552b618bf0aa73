// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package node

import "errors"

// Collect reads the facts of this node; only Linux has them.
func Collect() (Facts, error) { return Facts{}, errors.New("node facts are only read on Linux") }
