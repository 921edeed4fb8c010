package netsys

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// MissingLinkError is a link that did not appear in time: one named
// Name, or one with an address in the prefix Name (LinkIn).
type MissingLinkError struct {
	Name   string
	Wait   time.Duration
	Prefix bool
}

func (e *MissingLinkError) Error() string {
	if e.Prefix {
		return fmt.Sprintf("no interface with an address in %s appeared within %v", e.Name, e.Wait)
	}
	return fmt.Sprintf("interface %q did not appear within %v", e.Name, e.Wait)
}

// WaitLinks waits up to d for every link in names to exist in this
// process's namespace, as an orchestrator (containerlab, Multus) attaches
// a container's interfaces after it starts. It subscribes to link
// updates before it looks, so a link added between the look and the
// subscription is not missed. The error names the first link still
// missing at the deadline (*MissingLinkError) or the context's end.
func WaitLinks(ctx context.Context, names []string, d time.Duration) error {
	updates := make(chan netlink.LinkUpdate, 64)
	done := make(chan struct{})
	defer close(done)
	if err := netlink.LinkSubscribe(updates, done); err != nil {
		return fmt.Errorf("netsys: subscribe to link updates: %w", err)
	}
	missing := map[string]bool{}
	for _, n := range names {
		if _, err := netlink.LinkByName(n); err != nil {
			missing[n] = true
		}
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for len(missing) > 0 {
		select {
		case u, ok := <-updates:
			if !ok {
				return fmt.Errorf("netsys: link updates ended")
			}
			if u.Header.Type == unix.RTM_NEWLINK {
				delete(missing, u.Attrs().Name)
			}
		case <-timer.C:
			for _, n := range names { // the first missing in the order given
				if missing[n] {
					return &MissingLinkError{Name: n, Wait: d}
				}
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// LinkIn returns the name of the one link that holds an address in p,
// waiting up to d (0: looking once) for one to appear. A container's
// interfaces are named in the order the engine attached its networks,
// which Docker does not keep from one start to the next, while the
// networks' prefixes are fixed. Two links with addresses in p are an
// error: which one was meant cannot be told.
func LinkIn(ctx context.Context, p netip.Prefix, d time.Duration) (string, error) {
	p = p.Masked()
	deadline := time.Now().Add(d)
	for {
		addrs, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
		if err != nil {
			return "", fmt.Errorf("netsys: list addresses: %w", err)
		}
		index := 0
		for _, a := range addrs {
			ip, ok := netip.AddrFromSlice(a.IP)
			if !ok || !p.Contains(ip.Unmap()) || a.LinkIndex == index {
				continue
			}
			if index != 0 {
				return "", fmt.Errorf("interfaces %s and %s both hold an address in %v: give one by name", linkName(index), linkName(a.LinkIndex), p)
			}
			index = a.LinkIndex
		}
		if index != 0 {
			return linkName(index), nil
		}
		if !time.Now().Before(deadline) {
			return "", &MissingLinkError{Name: p.String(), Wait: d, Prefix: true}
		}
		// Addresses arrive after their link: polling is simpler than
		// following two kinds of netlink updates, and the wait is short.
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// linkName is the name of link index, or the index when the link is gone.
func linkName(index int) string {
	if l, err := netlink.LinkByIndex(index); err == nil {
		return l.Attrs().Name
	}
	return fmt.Sprintf("#%d", index)
}
