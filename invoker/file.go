package invoker

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Modes of the files pi2hop writes for a user: captures hold packet
// contents, so only the user reads them; reports and plots are shared
// with the user's group.
const (
	ModeCapture fs.FileMode = 0o600
	ModeReport  fs.FileMode = 0o640
	ModeDir     fs.FileMode = 0o750
)

// ErrExists is returned (wrapped, with the name) when an output file is
// already there: pi2hop never overwrites what it did not create.
var ErrExists = errors.New("already exists; pi2hop does not overwrite files")

// Create makes a new file for u at path: never following a symlink
// planted there (O_NOFOLLOW), never opening an existing file (O_EXCL),
// with mode perm, owned by u. An existing name is an error naming it.
func (u User) Create(path string, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow|syscall.O_CLOEXEC, perm)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return nil, fmt.Errorf("%s is a symbolic link: refusing to write through it", path)
			}
			return nil, fmt.Errorf("%s: %w", path, ErrExists)
		}
		return nil, err
	}
	if err := u.own(f, perm); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return f, nil
}

// WriteFile writes data to a new file for u (see Create).
func (u User) WriteFile(path string, data []byte, perm fs.FileMode) error {
	return u.WriteWith(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteWith creates a new file for u (see Create) and lets write fill it.
// A failed write leaves no partial file behind.
func (u User) WriteWith(path string, perm fs.FileMode, write func(io.Writer) error) error {
	f, err := u.Create(path, perm)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// Mkdir makes a new directory for u at path (it must not exist), owned by u.
func (u User) Mkdir(path string, perm fs.FileMode) error {
	if err := os.Mkdir(path, perm); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", path, ErrExists)
		}
		return err
	}
	if os.Geteuid() != 0 {
		return nil
	}
	// Lchown: the directory was just made by us, but never follow a link
	// swapped in since.
	return os.Lchown(path, int(u.UID), int(u.GID))
}

// own gives f to u when we are root and u is someone else, with mode
// perm exactly (creation applied the umask).
func (u User) own(f *os.File, perm fs.FileMode) error {
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if os.Geteuid() != 0 || u.UID == 0 {
		return nil
	}
	return f.Chown(int(u.UID), int(u.GID))
}
