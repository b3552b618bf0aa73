// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"strings"
	"testing"
)

func TestLaurelConfig(t *testing.T) {
	node := strings.Split(`# Write log files relative to this directory
directory = "/var/log/laurel"
user = "_laurel"
statusreport-period = 0

[auditlog]
file = "audit.log"
size = 5000000
generations = 10

[transform]
execve-argv = [ "array" ]
`, "\n")
	got := laurelConfig(node, "/run/x/laurel")
	for _, want := range []string{"directory = \"/run/x/laurel\"\n", "[auditlog]\nfile = \"audit.log\"\nsize = 1099511627776\ngenerations = 1\n",
		"statusreport-period = 0\n", "[transform]\nexecve-argv = [ \"array\" ]\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
	for _, gone := range []string{"_laurel", "/var/log/laurel\"", "5000000", "generations = 10"} {
		if strings.Contains(got, gone) {
			t.Errorf("config keeps %q:\n%s", gone, got)
		}
	}
	if got := laurelConfig(nil, "/d"); !strings.Contains(got, "directory = \"/d\"\n[auditlog]\nfile = \"audit.log\"") {
		t.Errorf("no node config: %s", got)
	}
}
