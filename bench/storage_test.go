//go:build linux

package bench

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// On cgroup v2 the simulated HDD enables the io controller (and memory,
// for writeback) in the root cgroup where they are not, says so before it
// does, and throttles the loop device with io.max in a cgroup of its own.
// A directory stands in for the cgroup root: what is checked is what bench
// writes there, not what the kernel does with it.
func TestThrottleV2Writes(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n")
	write("cgroup.subtree_control", "cpu pids\n")
	var recorded []string
	s := &Storage{}
	how, err := s.throttleV2(root, "7:3", func(c []string) error { recorded = c; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(recorded, []string{"io", "memory"}) {
		t.Errorf("recorded %q, want io and memory", recorded)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "cgroup.subtree_control")); string(b) != "+io +memory" {
		t.Errorf("subtree_control written %q", b)
	}
	if s.cgroup == nil || !strings.HasPrefix(filepath.Base(s.cgroup.Path), "tracer-bench-io-") {
		t.Fatalf("log writers' cgroup %+v", s.cgroup)
	}
	b, _ := os.ReadFile(filepath.Join(s.cgroup.Path, "io.max"))
	if want := "7:3 rbps=104857600 wbps=104857600 riops=150 wiops=150"; string(b) != want {
		t.Errorf("io.max %q, want %q", b, want)
	}
	if !strings.Contains(how, "io.max") {
		t.Errorf("description %q", how)
	}
	// Controllers the node had enabled are not touched, nor recorded.
	write("cgroup.subtree_control", "io memory\n")
	recorded = nil
	s2 := &Storage{}
	if _, err := s2.throttleV2(root, "7:4", func(c []string) error { recorded = c; return nil }); err != nil {
		t.Fatal(err)
	}
	if recorded != nil {
		t.Errorf("recorded %q though io and memory were enabled", recorded)
	}
	for _, st := range []*Storage{s, s2} {
		if st.cgroup != nil {
			unix.Close(st.cgroup.fd)
			_ = os.RemoveAll(st.cgroup.Path)
		}
	}
}
