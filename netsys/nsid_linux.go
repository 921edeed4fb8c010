package netsys

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// CurrentNS identifies the process's network namespace (that of its main
// thread, where ns "" operations act), with its name under NetnsDir when
// one is bound there.
func CurrentNS() (NSID, error) {
	id, err := statNS("/proc/self/ns/net")
	if err != nil {
		return NSID{}, err
	}
	ents, _ := os.ReadDir(NetnsDir)
	for _, e := range ents {
		if o, err := statNS(filepath.Join(NetnsDir, e.Name())); err == nil && o.Same(id) {
			id.Name = e.Name()
			break
		}
	}
	return id, nil
}

func statNS(path string) (NSID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return NSID{}, err
	}
	return NSID{Dev: uint64(st.Dev), Ino: st.Ino}, nil
}

// FindNS returns how this package's functions reach namespace id now,
// for their ns argument: "" when it is the process's own; its name when
// it has one; else the path of the ns/net file of a process that lives
// in it (a container's). ok is false when there is none: the
// namespace is gone. A named namespace is found by its name only, and
// only with its inode: inode numbers are reused, and a namespace made
// since under the same name, or by anyone with the number, is another.
func FindNS(id NSID) (path string, ok bool) {
	if cur, err := statNS("/proc/self/ns/net"); err == nil && cur.Same(id) {
		return "", true
	}
	if id.Name != "" {
		o, err := statNS(filepath.Join(NetnsDir, id.Name))
		return id.Name, err == nil && o.Same(id)
	}
	procs, _ := os.ReadDir("/proc")
	for _, e := range procs {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		p := filepath.Join("/proc", e.Name(), "ns", "net")
		if o, err := statNS(p); err == nil && o.Same(id) {
			return p, true
		}
	}
	return "", false
}

// RulePriorityUsed reports whether a policy rule of either family sits
// at priority prio in the process's namespace: someone else's rules there
// would interleave with those a gateway adds at that priority.
func RulePriorityUsed(prio int) (bool, error) {
	used := false
	err := withHandle("", func(h *netlink.Handle) error {
		rules, err := h.RuleList(netlink.FAMILY_ALL)
		for _, r := range rules {
			used = used || r.Priority == prio
		}
		return err
	})
	return used, err
}

// SignalNS sends sig to every process whose network namespace is the
// named one (its main thread's, as /proc/PID/ns/net gives it) and
// returns how many it signalled: the processes a command started there
// and left behind, which would otherwise hold the namespace, with no
// devices, after its owner removed it.
func SignalNS(name string, sig syscall.Signal) (int, error) {
	id, err := statNS(filepath.Join(NetnsDir, name))
	if err != nil {
		return 0, err
	}
	self := os.Getpid()
	n := 0
	procs, _ := os.ReadDir("/proc")
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if o, err := statNS(filepath.Join("/proc", e.Name(), "ns", "net")); err == nil && o.Same(id) && unix.Kill(pid, sig) == nil {
			n++
		}
	}
	return n, nil
}
