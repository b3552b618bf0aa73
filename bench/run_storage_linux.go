// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/node"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// The simulated HDD: what a 7200 rpm disk sustains for small synchronous
// writes and for streaming.
const (
	hddIOPS      = 150
	hddBPS       = 100 << 20
	hddImageSize = 4 << 30 // sparse: only what is written takes space
)

// Storage is where the event logs of a bench run go: our JSON log and
// auditd's log_file. Label is what every output shows for it.
type Storage struct {
	Kind  string // ssd, hdd, hdd-simulated or dir
	Label string // ssd, hdd, hdd-simulated, or the --log-dir path
	Dir   string
	Desc  string // the device under Dir and how it behaves
	undo  []func() error
	// cgroup, when set, is where the log writers must run for the
	// simulated disk's throttle to apply (cgroup v2).
	cgroup *Cgroup
}

// OpenStorage prepares a log directory of the given kind: "ssd" (a
// directory on the root disk), "hdd" (a rotational disk when the node has
// one, else a simulated one) or "dir" (logDir as given). Close undoes it.
// record is told, before they change, which cgroup controllers the
// simulated disk enables on the node, so that `tracer cleanup` can disable
// them again should bench be killed.
func OpenStorage(kind, logDir string, record func(enabled []string) error) (s *Storage, err error) {
	s = &Storage{Kind: kind}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()
	switch kind {
	case "dir":
		if err := os.MkdirAll(logDir, 0o755); err != nil {
			return nil, vocab.Usagef("cannot use --log-dir %s: %v", logDir, err)
		}
		dir, err := os.MkdirTemp(logDir, "tracer-bench-")
		if err != nil {
			return nil, vocab.Usagef("cannot write in --log-dir %s: %v", logDir, err)
		}
		s.addDir(dir)
		s.Label = logDir
		s.Desc = describeDir(dir)
		return s, nil
	case "ssd":
		dir, err := os.MkdirTemp("/var/tmp", stalePrefix())
		if err != nil {
			return nil, fmt.Errorf("making log directory: %w", err)
		}
		s.addDir(dir)
		s.Label = "ssd"
		if hostFacts.DiskAt(dir).Kind() == "hdd" {
			// Call it what it is: the root disk of this node spins.
			s.Label = "hdd"
		}
		s.Desc = describeDir(dir)
		return s, nil
	case "hdd":
		if mnt, d, ok := rotationalMount(); ok {
			dir, err := os.MkdirTemp(mnt, ".tracer-bench-")
			if err == nil {
				s.addDir(dir)
				s.Kind, s.Label = "hdd", "hdd"
				s.Desc = fmt.Sprintf("%s on %s (rotational disk)", dir, diskName(d))
				return s, nil
			}
		}
		s.Kind, s.Label = "hdd-simulated", "hdd-simulated"
		if err := s.simulateHDD(record); err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, vocab.Usagef("unknown --storage %q: use ssd or hdd (or --log-dir DIR)", kind)
}

func (s *Storage) addDir(dir string) {
	s.Dir = dir
	s.undo = append(s.undo, func() error { return os.RemoveAll(dir) })
}

// Close removes what OpenStorage made, last first, and reports the first error.
func (s *Storage) Close() error {
	var first error
	for i := len(s.undo) - 1; i >= 0; i-- {
		if err := s.undo[i](); err != nil && first == nil {
			first = err
		}
	}
	s.undo = nil
	return first
}

// simulateHDD makes a loop device on a sparse file, formats it ext4, mounts
// it and throttles it to what a 7200 rpm disk sustains, with what the node
// has:
//
//   - cgroup v2 (RHEL 9, every v2-only node): io.max (rbps, wbps, riops,
//     wiops) on the loop device in a cgroup of bench's own, where the log
//     writers (tracer watch, bench's auditd) run. The memory controller is
//     enabled with io where the node has it, so that the page cache's
//     writeback of their logs is charged, and throttled, there too.
//   - cgroup v1 blkio (RHEL 7 and 8): the write throttles of the root blkio
//     cgroup on the loop device, which every writer meets -- the tracer,
//     auditd, the page cache flusher and the ext4 journal thread.
//
// The device is the bench's own: nothing else on the node is slowed.
func (s *Storage) simulateHDD(record func([]string) error) error {
	v2 := cgroupV2Mount()
	useV2 := v2 != "" && slices.Contains(cgroupControllers(v2), "io")
	blkio := ""
	if !useV2 {
		if blkio = cgroupV1Mount("blkio"); blkio == "" {
			return vocab.Usagef("cannot simulate an HDD: this node has neither the io controller of cgroup v2 nor the blkio controller of cgroup v1; give --log-dir on a real disk instead")
		}
	}
	for _, tool := range []string{"losetup", "mkfs.ext4"} {
		if _, err := exec.LookPath(tool); err != nil {
			return vocab.Usagef("cannot simulate an HDD: %s not found (install util-linux and e2fsprogs); give --log-dir on a real disk instead", tool)
		}
	}
	base, err := os.MkdirTemp("/var/tmp", stalePrefix())
	if err != nil {
		return fmt.Errorf("making directory for the simulated disk: %w", err)
	}
	s.undo = append(s.undo, func() error { return os.RemoveAll(base) })
	img := filepath.Join(base, "disk.img")
	f, err := os.Create(img)
	if err != nil {
		return fmt.Errorf("making disk image: %w", err)
	}
	err = f.Truncate(hddImageSize)
	f.Close()
	if err != nil {
		return fmt.Errorf("sizing disk image: %w", err)
	}
	out, err := exec.Command("losetup", "--find", "--show", img).Output()
	if err != nil {
		return fmt.Errorf("attaching loop device: %w", cmdErr(err))
	}
	loop := strings.TrimSpace(string(out))
	s.undo = append(s.undo, func() error {
		if out, err := exec.Command("losetup", "-d", loop).CombinedOutput(); err != nil {
			return fmt.Errorf("detaching %s: %v: %s", loop, err, strings.TrimSpace(string(out)))
		}
		return nil
	})
	// No lazy initialisation: it would write in the background while runs are timed.
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-N", "8192",
		"-E", "lazy_itable_init=0,lazy_journal_init=0", loop).CombinedOutput(); err != nil {
		return fmt.Errorf("formatting %s: %v: %s", loop, err, strings.TrimSpace(string(out)))
	}
	mnt := filepath.Join(base, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return fmt.Errorf("making mount point: %w", err)
	}
	if err := unix.Mount(loop, mnt, "ext4", 0, ""); err != nil {
		return fmt.Errorf("mounting %s: %w", loop, err)
	}
	s.undo = append(s.undo, func() error {
		var err error
		for i := 0; i < 50; i++ { // a watcher that just exited may still hold a file for a moment
			if err = unix.Unmount(mnt, 0); err == nil || !errors.Is(err, unix.EBUSY) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("unmounting %s: %w", mnt, err)
		}
		return nil
	})
	var st unix.Stat_t
	if err := unix.Stat(loop, &st); err != nil {
		return fmt.Errorf("reading device number of %s: %w", loop, err)
	}
	dev := fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	how := ""
	if useV2 {
		if how, err = s.throttleV2(v2, dev, record); err != nil {
			return err
		}
	} else {
		limits := map[string]string{
			"blkio.throttle.write_iops_device": strconv.Itoa(hddIOPS),
			"blkio.throttle.write_bps_device":  strconv.Itoa(hddBPS),
		}
		for _, file := range []string{"blkio.throttle.write_iops_device", "blkio.throttle.write_bps_device"} {
			path := filepath.Join(blkio, file)
			if err := os.WriteFile(path, []byte(dev+" "+limits[file]), 0); err != nil {
				return fmt.Errorf("throttling %s in %s: %w", loop, path, err)
			}
			s.undo = append(s.undo, func() error {
				if err := os.WriteFile(path, []byte(dev+" 0"), 0); err != nil {
					return fmt.Errorf("removing throttle of %s from %s: %w", loop, path, err)
				}
				return nil
			})
		}
		how = fmt.Sprintf("throttled to %d write IOPS and %d MB/s in the root blkio cgroup (v1)", hddIOPS, hddBPS>>20)
	}
	dir := filepath.Join(mnt, "logs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("making log directory: %w", err)
	}
	s.Dir = dir
	s.Desc = fmt.Sprintf("simulated: %s (ext4 on a file on %s) %s", loop, diskName(hostFacts.DiskAt(base)), how)
	return nil
}

// throttleV2 makes the log writers' cgroup with io.max on device dev,
// enabling the io (and memory) controllers in the root cgroup first where
// they are not.
func (s *Storage) throttleV2(root, dev string, record func([]string) error) (string, error) {
	want := []string{"io"}
	if slices.Contains(cgroupControllers(root), "memory") {
		want = append(want, "memory")
	}
	enabled := cgroupSubtree(root)
	var enable []string
	for _, c := range want {
		if !slices.Contains(enabled, c) {
			enable = append(enable, c)
		}
	}
	if len(enable) > 0 {
		if record != nil {
			if err := record(enable); err != nil {
				return "", err
			}
		}
		if err := writeSubtree(root, "+", enable); err != nil {
			return "", fmt.Errorf("enabling the %s controllers in %s: %w", strings.Join(enable, " and "), root, err)
		}
		s.undo = append(s.undo, func() error {
			_, err := disableControllers(root, enable)
			return err
		})
	}
	cg, err := newCgroupAt(filepath.Join(root, fmt.Sprintf("tracer-bench-io-%d", os.Getpid())))
	if err != nil {
		return "", err
	}
	s.undo = append(s.undo, cg.Close)
	limit := fmt.Sprintf("%s rbps=%d wbps=%d riops=%d wiops=%d", dev, hddBPS, hddBPS, hddIOPS, hddIOPS)
	if err := os.WriteFile(filepath.Join(cg.Path, "io.max"), []byte(limit), 0); err != nil {
		return "", fmt.Errorf("throttling %s in %s: %w", dev, cg.Path, err)
	}
	s.cgroup = cg
	return fmt.Sprintf("throttled to %d IOPS and %d MB/s by io.max in cgroup %s (v2), where the log writers run",
		hddIOPS, hddBPS>>20, strings.TrimPrefix(cg.Path, root)), nil
}

func cgroupControllers(root string) []string { return host.CgroupControllers(root) }

func cgroupSubtree(root string) []string { return host.CgroupSubtree(root) }

func writeSubtree(root, sign string, ctrls []string) error {
	var parts []string
	for _, c := range ctrls {
		parts = append(parts, sign+c)
	}
	return os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte(strings.Join(parts, " ")), 0)
}

// disableControllers disables ctrls in root's subtree_control where they
// are still enabled, and says what it did.
func disableControllers(root string, ctrls []string) ([]string, error) {
	enabled := cgroupSubtree(root)
	var on []string
	for _, c := range ctrls {
		if slices.Contains(enabled, c) {
			on = append(on, c)
		}
	}
	if len(on) == 0 {
		return nil, nil
	}
	if err := writeSubtree(root, "-", on); err != nil {
		return nil, fmt.Errorf("disabling the %s controllers bench enabled in %s: %w", strings.Join(on, " and "), root, err)
	}
	return []string{"disabled the cgroup controllers " + strings.Join(on, ", ") + " bench had enabled"}, nil
}

// stalePrefix names bench's directories under /var/tmp after its pid, so
// that a later run can tell the leftovers of a killed one.
func stalePrefix() string { return fmt.Sprintf("tracer-bench-%d-", os.Getpid()) }

// removeStale undoes what a bench killed with SIGKILL left under /var/tmp:
// a simulated disk's throttle, mount and loop device, and the directories.
func removeStale() { removeStaleIn("/var/tmp") }

// detachLoop detaches a loop device (replaced in tests).
var detachLoop = func(dev string) error { return exec.Command("losetup", "-d", dev).Run() }

// removeStaleIn is removeStale in base. Any user can make a directory
// named like bench's in /var/tmp, and mount there what names any device
// (a FUSE mount's fsname): only root's own 0700 directories, as
// os.MkdirTemp makes them, are bench's, and only a loop device whose
// backing file lies in one is its simulated disk.
func removeStaleIn(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, "tracer-bench-*-*"))
	for _, dir := range dirs {
		f := strings.SplitN(strings.TrimPrefix(filepath.Base(dir), "tracer-bench-"), "-", 2)
		pid, err := strconv.Atoi(f[0])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); !os.IsNotExist(err) {
			continue // its bench still runs
		}
		if !benchOwnDir(dir) {
			continue
		}
		mounted := false
		mounts, _ := hostFacts.Mounts()
		for _, m := range mounts {
			if m.MountPoint != filepath.Join(dir, "mnt") {
				continue
			}
			mounted = true
			if !loopBackedIn(m.Source, dir) {
				continue // not bench's disk: left as it is, and dir with it
			}
			var st unix.Stat_t
			if unix.Stat(m.Source, &st) == nil {
				dev := fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
				if blkio := cgroupV1Mount("blkio"); blkio != "" {
					for _, file := range []string{"blkio.throttle.write_iops_device", "blkio.throttle.write_bps_device"} {
						_ = os.WriteFile(filepath.Join(blkio, file), []byte(dev+" 0"), 0)
					}
				}
			}
			if unix.Unmount(m.MountPoint, 0) == nil {
				mounted = false
				_ = detachLoop(m.Source)
			}
		}
		if !mounted {
			_ = os.RemoveAll(dir)
		}
	}
}

// benchOwnDir reports whether dir is a directory (not a link) owned by
// root with mode 0700: one bench made.
func benchOwnDir(dir string) bool {
	var st unix.Stat_t
	if unix.Lstat(dir, &st) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Uid == 0 && st.Mode&0o7777 == 0o700
}

// loopBackedIn reports whether dev is a loop device whose backing file
// lies in dir (sysfs names it; "(deleted)" follows a removed one).
func loopBackedIn(dev, dir string) bool {
	name := filepath.Base(dev)
	if !strings.HasPrefix(dev, "/dev/loop") || strings.ContainsAny(name, "/.") {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/sys/block", name, "loop/backing_file"))
	if err != nil {
		return false
	}
	file := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
	return strings.HasPrefix(file, filepath.Clean(dir)+"/")
}

// diskName names the whole disks of d ("sda", "sda, sdb"), or its device.
func diskName(d node.Disk) string {
	switch {
	case len(d.Disks) > 0:
		return strings.Join(d.Disks, ", ")
	case d.Device != "":
		return "device " + d.Device
	}
	return "unknown disk"
}

// diskKind says how a disk behaves, in bench's words.
func diskKind(d node.Disk) string {
	switch d.Kind() {
	case "hdd":
		return "rotational"
	case "virtual":
		if node.Yes(d.Rotational) {
			return "virtual disk, reports rotational"
		}
		return "virtual disk"
	}
	return "non-rotational"
}

func describeDir(dir string) string {
	d := hostFacts.DiskAt(dir)
	desc := fmt.Sprintf("%s on %s (%s)", dir, diskName(d), diskKind(d))
	if lat, err := dsyncLatency(dir); err == nil {
		desc += fmt.Sprintf(", 4 KiB O_DSYNC write %.2f ms", lat*1000)
	}
	return desc
}

// dsyncLatency is the median time of a 4 KiB synchronous write in dir: the
// figure that tells an SSD (well under a millisecond) from a disk that
// seeks (several milliseconds).
func dsyncLatency(dir string) (float64, error) {
	f, err := os.CreateTemp(dir, ".dsync-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	g, err := os.OpenFile(f.Name(), os.O_WRONLY|unix.O_DSYNC, 0)
	if err != nil {
		return 0, err
	}
	defer g.Close()
	buf := make([]byte, 4096)
	var ts []float64
	for i := 0; i < 15; i++ {
		t0 := time.Now()
		if _, err := g.WriteAt(buf, int64(i)*4096); err != nil {
			return 0, err
		}
		ts = append(ts, time.Since(t0).Seconds())
	}
	return Median(ts), nil
}

// cgroupV1Mount is where the v1 hierarchy with controller is mounted, or "".
func cgroupV1Mount(controller string) string { return hostFacts.CgroupV1Mount(controller) }

// cgroupV2Mount is where the unified (v2) hierarchy is mounted, or "".
func cgroupV2Mount() string { return hostFacts.CgroupV2Mount() }

// rotationalMount finds a writable filesystem on a real rotational disk,
// the one with the most free space.
func rotationalMount() (string, node.Disk, bool) {
	type cand struct {
		point string
		d     node.Disk
		free  uint64
	}
	var cs []cand
	for _, m := range rotationalMounts(hostFacts) {
		var st unix.Statfs_t
		if unix.Statfs(m.MountPoint, &st) != nil || unix.Access(m.MountPoint, unix.W_OK) != nil {
			continue
		}
		cs = append(cs, cand{m.MountPoint, hostFacts.DiskOfDevice(m.Device), st.Bavail * uint64(st.Bsize)})
	}
	if len(cs) == 0 {
		return "", node.Disk{}, false
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].free > cs[j].free })
	return cs[0].point, cs[0].d, true
}

// rotationalMounts are the read-write mounts of a block device whose disk
// is an HDD by node.Disk.Kind, the test doctor applies to the audit log.
func rotationalMounts(r node.Reader) []host.Mount {
	mounts, err := r.Mounts()
	if err != nil {
		return nil
	}
	var out []host.Mount
	for _, m := range mounts {
		_, ro := m.Options["ro"]
		_, superRO := m.SuperOptions["ro"]
		if strings.HasPrefix(m.Device, "0:") || ro || superRO {
			continue
		}
		if r.DiskOfDevice(m.Device).Kind() == "hdd" {
			out = append(out, m)
		}
	}
	return out
}

// cmdErr adds a command's stderr to its error.
func cmdErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}
