// Package privs tells what the process may do: its effective
// capabilities, read once from the kernel, and the one-line error a
// command gives when one it needs is missing.
package privs

import (
	"fmt"
	"strings"
)

// Cap is a Linux capability number (linux/capability.h).
type Cap uint

// The capabilities pi2hop's commands need or use.
const (
	NetAdmin Cap = 12 // TUN devices, routes, rules, nftables, sysctls of its network namespace
	SysNice  Cap = 23 // SCHED_FIFO owner threads
	SysAdmin Cap = 21 // new network namespaces (setns, mount of /run/netns)
)

// String is the capability's name as capabilities(7) and docker's
// --cap-add spell it.
func (c Cap) String() string {
	switch c {
	case NetAdmin:
		return "CAP_NET_ADMIN"
	case SysNice:
		return "CAP_SYS_NICE"
	case SysAdmin:
		return "CAP_SYS_ADMIN"
	}
	return fmt.Sprintf("capability %d", uint(c))
}

// Set is a set of effective capabilities; Known is false where the system
// does not say (then Has answers true, so nothing is refused on a guess).
type Set struct {
	Eff   uint64
	Known bool
}

// Has reports whether c is in the set.
func (s Set) Has(c Cap) bool { return !s.Known || s.Eff&(1<<c) != 0 }

// Missing returns those of want that s lacks, in the order given.
func (s Set) Missing(want ...Cap) []Cap {
	var m []Cap
	for _, c := range want {
		if !s.Has(c) {
			m = append(m, c)
		}
	}
	return m
}

// Need returns the error command gives when s lacks any of want (nil
// when it has them all): one line naming each missing capability and what
// it is for.
func (s Set) Need(command, why string, want ...Cap) error {
	m := s.Missing(want...)
	if len(m) == 0 {
		return nil
	}
	names := make([]string, len(m))
	for i, c := range m {
		names[i] = c.String()
	}
	return fmt.Errorf("%s needs %s to %s; run as root or add it (docker: --cap-add %s)",
		command, strings.Join(names, " and "), why, strings.Join(dockerNames(m), " --cap-add "))
}

func dockerNames(m []Cap) []string {
	out := make([]string, len(m))
	for i, c := range m {
		out[i] = strings.TrimPrefix(c.String(), "CAP_")
	}
	return out
}

// ParseStatus reads the CapEff line of a /proc/PID/status text.
func ParseStatus(status string) (Set, error) {
	for _, line := range strings.Split(status, "\n") {
		v, ok := strings.CutPrefix(line, "CapEff:")
		if !ok {
			continue
		}
		var eff uint64
		if _, err := fmt.Sscanf(strings.TrimSpace(v), "%x", &eff); err != nil {
			return Set{}, fmt.Errorf("privs: CapEff %q: want hexadecimal", strings.TrimSpace(v))
		}
		return Set{Eff: eff, Known: true}, nil
	}
	return Set{}, fmt.Errorf("privs: no CapEff line in the process status")
}
