// SPDX-License-Identifier: Apache-2.0

package abi

import "testing"

func TestArchAndTable(t *testing.T) {
	for _, c := range []struct {
		machine      string
		b32          bool
		arch         uint32
		table        string
		knownMachine bool
	}{
		{"x86_64", false, 0xc000003e, "x86_64", true},
		{"x86_64", true, 0x40000003, "i386", true},
		{"aarch64", false, 0xc00000b7, "aarch64", true},
		{"aarch64", true, 0x40000028, "arm", true},
		{"ppc64le", true, 0x14, "ppc", true},
		{"s390x", false, 0x80000016, "s390x", true},
		{"sparc", false, 0, "", false},
		{"", true, 0, "", false},
	} {
		if got := Arch(c.machine, c.b32); got != c.arch {
			t.Errorf("Arch(%q, %v) = %#x, want %#x", c.machine, c.b32, got, c.arch)
		}
		if got := Table(c.machine, c.b32); got != c.table {
			t.Errorf("Table(%q, %v) = %q, want %q", c.machine, c.b32, got, c.table)
		}
		if Known(c.machine) != c.knownMachine {
			t.Errorf("Known(%q) = %v", c.machine, !c.knownMachine)
		}
	}
}

func TestABI(t *testing.T) {
	for in, want := range map[string]string{
		"b64": "b64", "x86_64": "b64", "aarch64": "b64", "ppc64": "b64", "ppc64le": "b64", "s390x": "b64",
		"b32": "b32", "i386": "b32", "i686": "b32", "arm": "b32", "armeb": "b32", "ppc": "b32", "s390": "b32",
		"mips64": "mips64", "": "",
	} {
		if got := ABI(in); got != want {
			t.Errorf("ABI(%q) = %q, want %q", in, got, want)
		}
	}
}

// The Go architectures tracer builds for map to the machines whose
// audit ABIs the table has; another one is left as it is.
func TestMachineOf(t *testing.T) {
	for goarch, want := range map[string]string{"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"} {
		if got := MachineOf(goarch); got != want {
			t.Errorf("MachineOf(%s) = %s, want %s", goarch, got, want)
		}
	}
	if Arch(MachineOf("amd64"), true) != 0x40000003 {
		t.Error("amd64's 32-bit ABI is not i386")
	}
}
