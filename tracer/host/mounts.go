// SPDX-License-Identifier: Apache-2.0

package host

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// Mount is one mount of this process's mount namespace, as
// /proc/self/mountinfo lists it (proc(5)), with its paths unescaped.
type Mount struct {
	Device     string // major:minor of the filesystem
	Root       string // the directory of the filesystem mounted here, "/" for all of it
	MountPoint string
	FSType     string
	Source     string
	// Options are the mount's options, SuperOptions its filesystem's
	// ("ro", "mode=755", and a cgroup v1 hierarchy's controllers).
	Options, SuperOptions map[string]string
}

// Mounts reads the mount table of this process (procRoot/self/mountinfo).
func Mounts(procRoot string) ([]Mount, error) {
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	infos, err := fs.GetMounts()
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	out := make([]Mount, 0, len(infos))
	for _, m := range infos {
		// procfs leaves mountinfo's octal escapes in place.
		out = append(out, Mount{
			Device:       m.MajorMinorVer,
			Root:         unescape(m.Root),
			MountPoint:   unescape(m.MountPoint),
			FSType:       m.FSType,
			Source:       unescape(m.Source),
			Options:      m.Options,
			SuperOptions: m.SuperOptions,
		})
	}
	return out, nil
}

// unescape undoes the octal escapes of mountinfo (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// MountFor returns the mount that holds path: the longest mount point that
// is a prefix of it, the last one mounted when several stack.
func MountFor(mounts []Mount, path string) (Mount, bool) {
	best, found := Mount{}, false
	for _, m := range mounts {
		mp := m.MountPoint
		if path != mp && mp != "/" && !strings.HasPrefix(path, strings.TrimSuffix(mp, "/")+"/") {
			continue
		}
		if !found || len(mp) >= len(best.MountPoint) {
			best, found = m, true
		}
	}
	return best, found
}

// CgroupV2Mount is where the unified (v2) cgroup hierarchy is mounted:
// /sys/fs/cgroup on unified nodes, /sys/fs/cgroup/unified on hybrid ones.
// Only a mount of the hierarchy's root counts, for paths under it to match
// /proc/PID/cgroup's; of several, the shortest mount point.
func CgroupV2Mount(mounts []Mount) (string, bool) {
	best := ""
	for _, m := range mounts {
		if m.FSType != "cgroup2" || m.Root != "/" {
			continue
		}
		if best == "" || len(m.MountPoint) < len(best) {
			best = m.MountPoint
		}
	}
	return best, best != ""
}

// CgroupV1Mount is where the v1 cgroup hierarchy with controller (blkio,
// memory...) is mounted; a hierarchy names its controllers in its
// filesystem options.
func CgroupV1Mount(mounts []Mount, controller string) (string, bool) {
	for _, m := range mounts {
		if m.FSType != "cgroup" {
			continue
		}
		_, super := m.SuperOptions[controller]
		_, opt := m.Options[controller]
		if super || opt {
			return m.MountPoint, true
		}
	}
	return "", false
}

// CgroupControllers are the controllers a cgroup v2 directory may enable
// for its children (cgroup.controllers); nil when it cannot be read.
func CgroupControllers(dir string) []string { return cgroupList(dir, "cgroup.controllers") }

// CgroupSubtree are the controllers a cgroup v2 directory has enabled for
// its children (cgroup.subtree_control); nil when it cannot be read.
func CgroupSubtree(dir string) []string { return cgroupList(dir, "cgroup.subtree_control") }

func cgroupList(dir, file string) []string {
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}
