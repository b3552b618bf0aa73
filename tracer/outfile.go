package tracer

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// CreateOutput creates or truncates a file the user named for tracer to
// write: --output, bench result files, reports, profiles. tracer runs as
// root and these often sit in shared directories (/tmp), so a new file gets
// mode 0600 (its content shows what runs on the node), and the last path
// component is never followed if it is a symbolic link: someone who can
// write the directory could otherwise point the name at /etc/shadow and
// have root truncate it. An existing regular file is truncated and keeps
// its owner and mode, as the shell's > does. A symlink is a UsageError.
func CreateOutput(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err == nil {
		return f, nil
	}
	if errors.Is(err, syscall.ELOOP) && isSymlink(path) {
		return nil, symlinkError(path)
	}
	return nil, err // an *os.PathError: it names the path
}

// CheckOutput reports early, before long work, whether CreateOutput will
// refuse path: a symbolic link, a directory, or a directory that does not
// exist. It creates nothing.
func CheckOutput(path string) error {
	if isSymlink(path) {
		return symlinkError(path)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return Usagef("%s is a directory: name a file", path)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return Usagef("cannot create %s: directory %s does not exist", path, filepath.Dir(path))
	}
	return nil
}

func isSymlink(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}

func symlinkError(path string) error {
	return Usagef("%s is a symbolic link, which tracer does not write through: name the file itself (or - for stdout)", path)
}
