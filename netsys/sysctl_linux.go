package netsys

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pi2hop/pi2hop/internal/statefile"
	"golang.org/x/sys/unix"
)

// sysctlPath checks key ("net/ipv4/ip_forward") and returns its file.
func sysctlPath(key string) (string, error) {
	clean := filepath.Clean("/" + key)
	if key == "" || strings.Contains(key, "..") || clean != "/"+key {
		return "", fmt.Errorf("netsys: sysctl %q: want a path under /proc/sys such as net/ipv4/ip_forward", key)
	}
	return "/proc/sys" + clean, nil
}

// ReadSysctl returns the value of key in namespace ns ("" = the host's),
// without the trailing newline. /proc/sys/net shows the namespace of the
// thread that opens it, so the file is opened inside ns.
func ReadSysctl(ns, key string) (string, error) {
	p, err := sysctlPath(key)
	if err != nil {
		return "", err
	}
	var v string
	err = Do(ns, func() error {
		b, err := os.ReadFile(p)
		v = strings.TrimRight(string(b), "\n")
		return err
	})
	if err != nil {
		return "", fmt.Errorf("netsys: read sysctl %s: %w", key, err)
	}
	return v, nil
}

// WriteSysctl sets key to value in namespace ns ("" = the host's).
func WriteSysctl(ns, key, value string) error {
	p, err := sysctlPath(key)
	if err != nil {
		return err
	}
	// A value already in place is not written: a container's /proc/sys is
	// read-only, and the sysctls it needs are set when it starts.
	err = Do(ns, func() error {
		if b, err := os.ReadFile(p); err == nil && strings.TrimRight(string(b), "\n") == value {
			return nil
		}
		err := os.WriteFile(p, []byte(value), 0o644)
		if errors.Is(err, unix.EROFS) && ns != "" {
			err = writeThroughOwnProc(key, value)
		}
		return err
	})
	switch {
	case errors.Is(err, unix.EROFS), errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		dotted := strings.ReplaceAll(key, "/", ".")
		return fmt.Errorf("netsys: sysctl %s=%s: %w: this namespace's sysctls are not ours to change "+
			"(a container's /proc/sys is read-only): set it when the container starts (docker run --sysctl %s=%s)",
			dotted, value, err, dotted, value)
	case err != nil:
		return fmt.Errorf("netsys: write sysctl %s=%s: %w", key, value, err)
	}
	return nil
}

// writeThroughOwnProc writes key through a procfs mounted for this write
// alone, on the calling thread, which is in the namespace to change. A
// namespace this process made (a lab's, a shell's) is ours to set, but in
// a container the /proc/sys every namespace is seen through is a read-only
// mount; a fresh procfs is writable, and its sys/net shows the network
// namespace of the thread that opens it, as /proc/sys does. The mount is
// detached as soon as the write is done.
func writeThroughOwnProc(key, value string) error {
	dir, err := os.MkdirTemp("", "pi2hop-proc")
	if err != nil {
		return err
	}
	defer os.Remove(dir)
	if err := unix.Mount("proc", dir, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("%w (and mounting a procfs of our own: %v)", unix.EROFS, err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	return os.WriteFile(filepath.Join(dir, "sys", filepath.FromSlash(key)), []byte(value), 0o644)
}

// Sysctls such as net/ipv4/ip_forward belong to a whole namespace, and
// several instances may need them at once (a gateway and two NAT shells).
// If each restored the value it found, the first to exit would undo the
// others: it found forwarding off, and turns it off under them. So a
// shared sysctl is reference-counted across processes in a file in a
// folder locked with flock(2): the first holder records the value it
// found, later holders add their name, and only the last one out writes
// that first value back.

// sharedRefsFile is the reference record inside the locked folder; its
// leading dot keeps it apart from instances' NAME.json state files.
const sharedRefsFile = ".sysctls.json"

// sysctlRef is one shared sysctl in the record.
type sysctlRef struct {
	Orig    string   `json:"orig"`    // the value the first holder found
	Holders []string `json:"holders"` // who still needs it set
}

// LockDir takes an exclusive flock(2) on folder dir, waiting for it, and
// returns the function that releases it. The lock is the process's while
// the returned function is not called; a second LockDir in the same
// process waits for the first's release.
func LockDir(dir string) (unlock func(), err error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("netsys: lock %s: %w", dir, err)
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netsys: lock %s: %w", dir, err)
	}
	return func() { unix.Close(fd) }, nil // closing the only descriptor drops the lock
}

// nsID names the network namespace a sysctl of ns ("" = the process's)
// lives in by its inode, so instances in different namespaces never share
// a count.
func nsID(ns string) (string, error) {
	var id string
	err := Do(ns, func() error {
		var st unix.Stat_t
		if err := unix.Stat("/proc/thread-self/ns/net", &st); err != nil {
			return err
		}
		id = fmt.Sprintf("net:%d:%d", st.Dev, st.Ino)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("netsys: namespace of sysctls: %w", err)
	}
	return id, nil
}

// withRefs runs f on the reference record of folder dir under its lock
// and saves what f leaves (removing the file when it is empty).
func withRefs(dir string, f func(refs map[string]*sysctlRef) error) error {
	unlock, err := LockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	path := filepath.Join(dir, sharedRefsFile)
	refs := map[string]*sysctlRef{}
	switch b, err := os.ReadFile(path); {
	case err == nil:
		if err := json.Unmarshal(b, &refs); err != nil {
			return fmt.Errorf("netsys: shared sysctls %s: %w", path, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	if err := f(refs); err != nil {
		return err
	}
	if len(refs) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return statefile.WriteJSON(path, refs)
}

// ShareSysctls makes the journal's namespace-wide sysctls shared (see
// above): holder names this journal's owner in the record kept in folder
// dir, which must exist and be private to root. alive (nil: all are)
// says whether another holder's process still runs: a holder that does
// not is dropped from a record this journal joins. Its change, if its
// namespace still exists, is undone by the last holder out (the record
// keeps the first value found); and a record whose namespace is gone,
// left by a holder killed with it, is not taken for the record of a new
// namespace that gets the same inode number.
func (j *Journal) ShareSysctls(dir, holder string, alive func(holder string) bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.refsDir, j.holder, j.alive = dir, holder, alive
}

func (j *Journal) aliveFunc() func(string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.alive
}

func (j *Journal) shared(ns, key string) (dir, holder string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.refsDir == "" || ns != "" || !sharedKey(key) {
		return "", ""
	}
	return j.refsDir, j.holder
}

// BaseSysctl is the value key of namespace ns had before any instance
// sharing it changed it: the first holder's record if there is one, else
// the value now. A topology that decides from the value found (the
// gateway loosens a strict rp_filter) decides from this one, so it takes
// its reference even when another instance already made the change.
func (j *Journal) BaseSysctl(ns, key string) (string, error) {
	cur, err := ReadSysctl(ns, key)
	if err != nil {
		return "", err
	}
	dir, _ := j.shared(ns, key)
	if dir == "" {
		return cur, nil
	}
	id, err := nsID(ns)
	if err != nil {
		return "", err
	}
	base := cur
	err = withRefs(dir, func(refs map[string]*sysctlRef) error {
		if r := refs[id+":"+key]; r != nil {
			base = r.Orig
		}
		return nil
	})
	return base, err
}

// setShared sets a shared sysctl and takes this holder's reference: the
// entry is recorded first (with the value found now, for when the record
// is lost), then the count and the value change under the lock.
func (j *Journal) setShared(dir, holder, key, value string) error {
	id, err := nsID("")
	if err != nil {
		return err
	}
	cur, err := ReadSysctl("", key)
	if err != nil {
		return err
	}
	if !j.has(KindSysctl, "", key) {
		if _, err := j.record(Entry{Kind: KindSysctl, Name: key, Old: cur, Holder: holder, Refs: dir}); err != nil {
			return err
		}
	}
	return withRefs(dir, func(refs map[string]*sysctlRef) error {
		r := refs[id+":"+key]
		if r == nil {
			orig, err := ReadSysctl("", key)
			if err != nil {
				return err
			}
			r = &sysctlRef{Orig: orig}
			refs[id+":"+key] = r
		}
		if alive := j.aliveFunc(); alive != nil {
			r.Holders = slices.DeleteFunc(r.Holders, func(h string) bool { return h != holder && !alive(h) })
		}
		if !slices.Contains(r.Holders, holder) {
			r.Holders = append(r.Holders, holder)
		}
		return WriteSysctl("", key, value)
	})
}

// undoShared drops e's holder's reference and, if it was the last,
// writes back the value the first holder found. With no record of the
// key at all (it was lost, or the change never got that far) nobody else
// holds it, and the entry's own value is restored.
func undoShared(e Entry) error {
	id, err := nsID(e.NS)
	if err != nil {
		return err
	}
	return withRefs(e.Refs, func(refs map[string]*sysctlRef) error {
		k := id + ":" + e.Name
		r := refs[k]
		restore := e.Old
		if r != nil {
			r.Holders = slices.DeleteFunc(r.Holders, func(h string) bool { return h == e.Holder })
			if len(r.Holders) > 0 {
				return nil // another instance still needs it
			}
			restore = r.Orig
			delete(refs, k)
		}
		if err := WriteSysctl(e.NS, e.Name, restore); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	})
}

// ReleaseSysctls drops every reference holder has on the shared sysctls
// of namespace ns ("" = the process's; see Do) in folder dir's record,
// restoring those nobody else holds to the first holder's value: what a
// cleanup does when the holder's own record of its changes is lost.
// Releasing a holder that holds nothing does nothing.
func ReleaseSysctls(dir, ns, holder string) error {
	id, err := nsID(ns)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, sharedRefsFile)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return withRefs(dir, func(refs map[string]*sysctlRef) error {
		var errs []error
		for k, r := range refs {
			key, ok := strings.CutPrefix(k, id+":")
			if !ok || !slices.Contains(r.Holders, holder) {
				continue
			}
			r.Holders = slices.DeleteFunc(r.Holders, func(h string) bool { return h == holder })
			if len(r.Holders) > 0 {
				continue
			}
			delete(refs, k)
			if err := WriteSysctl(ns, key, r.Orig); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
}
