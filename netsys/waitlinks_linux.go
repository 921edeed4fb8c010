package netsys

import (
	"context"
	"fmt"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// MissingLinkError is a link that did not appear in time.
type MissingLinkError struct {
	Name string
	Wait time.Duration
}

func (e *MissingLinkError) Error() string {
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
