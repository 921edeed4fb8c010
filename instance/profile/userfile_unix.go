//go:build unix

package profile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// ReadUser reads the profiles in home's UserDir as the user uid may: each
// folder below home and each file is opened without following a symbolic
// link (O_NOFOLLOW, from the folder above) and must be that user's own,
// so root under sudo reads nothing the user could not have written; a
// file must be regular and at most MaxUserFile bytes. A missing folder
// holds no profiles. A file that cannot be read or parsed is a
// *UserError naming it, returned beside the profiles that could.
func ReadUser(home string, uid uint32) ([]Profile, []error) {
	dir, err := openUserDir(home, uid)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, []error{err}
	}
	defer dir.Close()
	entries, err := dir.ReadDir(-1)
	if err != nil {
		return nil, []error{fmt.Errorf("%s: %w", dir.Name(), err)}
	}
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	files := map[string][]string{} // profile name: its files
	for _, e := range entries {
		name, ext := nameOf(e.Name())
		if (ext == ".toml" || ext == ".json") && !strings.HasPrefix(e.Name(), ".") {
			files[name] = append(files[name], e.Name())
		}
	}
	var ps []Profile
	var errs []error
	for _, e := range entries {
		name, _ := nameOf(e.Name())
		fs := files[name]
		if len(fs) == 0 || fs[0] != e.Name() {
			continue
		}
		path := filepath.Join(dir.Name(), e.Name())
		if len(fs) > 1 {
			errs = append(errs, &UserError{name, fmt.Errorf("%s: profile %s is in %s too; keep one of the two", path, name, fs[1])})
			continue
		}
		data, err := readUserFile(dir, e.Name(), uid)
		if err != nil {
			errs = append(errs, &UserError{name, err})
			continue
		}
		p, err := ParseUser(path, data)
		if err != nil {
			errs = append(errs, &UserError{name, err})
			continue
		}
		ps = append(ps, p)
	}
	return ps, errs
}

// ReadFile reads the file at path as the user uid may, with the checks
// ReadUser makes of a profile's file: the last component is opened
// without following a symbolic link and must be uid's own regular file of
// at most MaxUserFile bytes (the folders above it are the caller's
// choice).
func ReadFile(path string, uid uint32) ([]byte, error) {
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return readUserFile(dir, filepath.Base(path), uid)
}

// openUserDir opens home/UserDir one folder at a time.
func openUserDir(home string, uid uint32) (*os.File, error) {
	fd, err := unix.Open(home, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: home, Err: err}
	}
	path := home
	for _, part := range strings.Split(UserDir, "/") {
		path = filepath.Join(path, part)
		next, err := unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return nil, openError(path, err)
		}
		fd = next
		if err := owned(fd, path, uid); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// readUserFile reads the profile file name in dir.
func readUserFile(dir *os.File, name string, uid uint32) ([]byte, error) {
	path := filepath.Join(dir.Name(), name)
	// O_NONBLOCK: a FIFO planted under a profile's name must not hang us.
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, openError(path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if err := owned(fd, path, uid); err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s: not a regular file", path)
	case fi.Size() > MaxUserFile:
		return nil, fmt.Errorf("%s: %d bytes, over the %d KiB a profile or configuration file may hold", path, fi.Size(), MaxUserFile>>10)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxUserFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > MaxUserFile {
		return nil, fmt.Errorf("%s: over the %d KiB a profile or configuration file may hold", path, MaxUserFile>>10)
	}
	return data, nil
}

func openError(path string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symbolic link: pi2hop does not follow links to profile or configuration files", path)
		}
	}
	return &os.PathError{Op: "open", Path: path, Err: err}
}

// owned checks that the file open at fd belongs to uid.
func owned(fd int, path string, uid uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Uid != uid {
		return fmt.Errorf("%s belongs to uid %d, not to the user reading profiles (uid %d): not read", path, st.Uid, uid)
	}
	return nil
}
