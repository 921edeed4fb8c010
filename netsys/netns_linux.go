package netsys

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// NewNamespace creates the named network namespace with its loopback up.
// The calling thread's namespace is not changed.
func NewNamespace(name string) error {
	if err := checkNSName(name); err != nil {
		return err
	}
	if NamespaceExists(name) {
		return fmt.Errorf("netsys: namespace %q already exists (%s)", name, filepath.Join(NetnsDir, name))
	}
	if err := shareNetnsDir(); err != nil {
		return err
	}
	return onFreshThread(func() error {
		// NewNamed unshares this (locked, soon discarded) thread into the
		// new namespace, which is exactly where lo must be brought up.
		h, err := netns.NewNamed(name)
		if err != nil {
			return fmt.Errorf("netsys: create namespace %q: %w", name, err)
		}
		h.Close()
		lo, err := netlink.LinkByName("lo")
		if err == nil {
			err = netlink.LinkSetUp(lo)
		}
		if err != nil {
			DeleteNamespace(name)
			return fmt.Errorf("netsys: namespace %q: bring up lo: %w", name, err)
		}
		return nil
	})
}

// shareNetnsDir makes NetnsDir a shared mount point, as ip-netns(8) does
// before its first namespace. Otherwise the first `ip netns add` after
// ours bind-mounts the folder onto itself, non-recursively, and hides the
// namespace mounts we made beneath it: they can then be neither unmounted
// nor removed ("Device or resource busy") until a reboot.
func shareNetnsDir() error {
	if err := os.MkdirAll(NetnsDir, 0o755); err != nil {
		return fmt.Errorf("netsys: %s: %w", NetnsDir, err)
	}
	for bound := false; ; bound = true {
		err := unix.Mount("", NetnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		if err == nil {
			return nil
		}
		if err != unix.EINVAL || bound {
			return fmt.Errorf("netsys: make %s a shared mount: %w", NetnsDir, err)
		}
		// Not a mount point yet: bind it onto itself, then share it.
		if err := unix.Mount(NetnsDir, NetnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("netsys: bind %s onto itself: %w", NetnsDir, err)
		}
	}
}

// DeleteNamespace removes the named namespace's bind mount; the namespace
// and its devices go away when the last process or descriptor leaves it.
// A namespace that does not exist is not an error.
func DeleteNamespace(name string) error {
	if err := checkNSName(name); err != nil {
		return err
	}
	if !NamespaceExists(name) {
		return nil
	}
	if err := netns.DeleteNamed(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("netsys: delete namespace %q: %w", name, err)
	}
	return nil
}

// NamespaceExists reports whether /run/netns/name exists, or the file
// of a namespace given by its path (a name starting with "/"; see Do).
func NamespaceExists(name string) bool {
	p := name
	if !strings.HasPrefix(name, "/") {
		p = filepath.Join(NetnsDir, name)
	}
	_, err := os.Stat(p)
	return err == nil
}

func checkNSName(name string) error {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return fmt.Errorf("netsys: namespace name %q: want a plain file name", name)
	}
	return nil
}

// Do runs f inside the named namespace, on a locked OS thread, and waits
// for it. Sockets and devices f creates stay in that namespace. Goroutines
// f starts do not inherit it, but processes f starts (os/exec) do.
// ns == "" runs f in the namespace this process started in; an ns that
// starts with "/" is a namespace file's path (FindNS), any other a name
// under NetnsDir.
//
// f runs on a goroutine of its own: the thread is returned to the runtime
// only after its namespace was restored, and is discarded otherwise.
func Do(ns string, f func() error) error {
	if ns == "" {
		return onFreshThread(func() error {
			if err := enterHostNS(); err != nil {
				return err
			}
			return f()
		})
	}
	target, err := openNS(ns)
	if err != nil {
		return err
	}
	defer target.Close()
	return onFreshThread(func() error {
		if err := netns.Set(target); err != nil {
			return fmt.Errorf("netsys: enter namespace %q: %w", ns, err)
		}
		return f()
	})
}

// openNS opens namespace ns (not ""): a path to its file, or a name
// under NetnsDir.
func openNS(ns string) (netns.NsHandle, error) {
	var h netns.NsHandle
	var err error
	if strings.HasPrefix(ns, "/") {
		h, err = netns.GetFromPath(ns)
	} else {
		h, err = netns.GetFromName(ns)
	}
	if err != nil {
		return h, fmt.Errorf("netsys: namespace %q: %w", ns, err)
	}
	return h, nil
}

// enterHostNS moves the calling (locked) thread into the namespace of the
// process's main thread, the one it was started in.
func enterHostNS() error {
	h, err := netns.GetFromPath("/proc/self/ns/net")
	if err != nil {
		return fmt.Errorf("netsys: open host namespace: %w", err)
	}
	defer h.Close()
	// setns needs CAP_SYS_ADMIN even into the namespace the thread is
	// already in; a run with only CAP_NET_ADMIN (a container) never leaves
	// the process's namespace, so it must not ask.
	if cur, err := netns.Get(); err == nil {
		same := cur.Equal(h)
		cur.Close()
		if same {
			return nil
		}
	}
	return netns.Set(h)
}

// onFreshThread runs f on a new goroutine locked to its OS thread and waits.
// If the thread's namespace cannot be put back, the goroutine exits still
// locked and the runtime discards the thread.
func onFreshThread(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			done <- fmt.Errorf("netsys: current namespace: %w", err)
			return // still locked: thread discarded
		}
		defer orig.Close()
		var ferr error
		func() {
			defer func() {
				if r := recover(); r != nil {
					ferr = fmt.Errorf("netsys: panic in namespace function: %v", r)
				}
			}()
			ferr = f()
		}()
		if restoreNS(orig) == nil {
			runtime.UnlockOSThread()
		}
		done <- ferr
	}()
	return <-done
}

// restoreNS puts the calling thread back into orig, without a setns (which
// needs CAP_SYS_ADMIN) when f never left it.
func restoreNS(orig netns.NsHandle) error {
	if cur, err := netns.Get(); err == nil {
		same := cur.Equal(orig)
		cur.Close()
		if same {
			return nil
		}
	}
	return netns.Set(orig)
}
