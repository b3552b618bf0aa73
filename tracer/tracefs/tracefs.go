// SPDX-License-Identifier: Apache-2.0

//go:build linux

// Package tracefs lets a caller use tracefs on a node where it is not
// mounted, without mounting it for anyone else: the work runs on an OS
// thread of its own, in a private mount namespace where tracefs is mounted,
// and the thread (and its namespace) ends with the work. Nothing stays
// mounted, and concurrent users cannot unmount it from under each other.
package tracefs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer/host"
)

// Path is where tracefs is looked for and mounted.
const Path = "/sys/kernel/tracing"

// ErrUnavailable marks a node where tracefs is not mounted and cannot be
// mounted privately either.
var ErrUnavailable = errors.New("tracefs unavailable")

// Mounted reports whether a tracefs, or a debugfs with its tracing
// directory, is mounted in this process's mount namespace.
func Mounted() bool {
	mounts, err := host.Mounts("/proc")
	if err != nil {
		return false
	}
	for _, m := range mounts {
		if m.Root != "/" {
			continue // a bind mount of a subdirectory
		}
		switch m.FSType {
		case "tracefs":
			return true
		case "debugfs":
			if st, err := os.Stat(filepath.Join(m.MountPoint, "tracing", "events")); err == nil && st.IsDir() {
				return true
			}
		}
	}
	return false
}

// Do runs fn where tracefs is mounted at Path: directly when it already is,
// otherwise on a locked thread in a private mount namespace that ends with
// fn. fn must not start goroutines that need the mount.
func Do(fn func() error) error {
	if Mounted() {
		return fn()
	}
	if _, err := os.Stat(Path); err != nil {
		return fmt.Errorf("%w: not mounted, and %s does not exist", ErrUnavailable, Path)
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			done <- inPrivateNamespace(fn)
			return // never unlocked: the thread exits, and its namespace with it
		}
		// The runtime never ends the main thread, so it must not change
		// namespace: hold it, and let a goroutine on another thread work.
		inner := make(chan error, 1)
		go func() {
			runtime.LockOSThread()
			inner <- inPrivateNamespace(fn)
		}()
		err := <-inner
		runtime.UnlockOSThread()
		done <- err
	}()
	return <-done
}

// inPrivateNamespace must run on a locked thread that then exits.
func inPrivateNamespace(fn func() error) error {
	if unix.Gettid() == unix.Getpid() {
		return errors.New("refusing to change the main thread's mount namespace")
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("%w: unsharing the mount namespace: %w", ErrUnavailable, err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("%w: making mounts private: %w", ErrUnavailable, err)
	}
	if err := unix.Mount("tracefs", Path, "tracefs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("%w: mounting it in a private namespace: %w", ErrUnavailable, err)
	}
	return fn()
}
