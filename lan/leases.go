package lan

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"time"

	"github.com/pi2hop/pi2hop/internal/readlimit"
	"github.com/pi2hop/pi2hop/internal/statefile"
)

// Lease is one device's address: what `stats` lists and what a restart
// reloads so the device keeps its address.
type Lease struct {
	MAC      string     `json:"mac"` // the client hardware address, aa:bb:cc:dd:ee:ff
	Addr     netip.Addr `json:"addr"`
	Hostname string     `json:"hostname,omitempty"` // DHCP option 12, as the device sent it
	Expiry   time.Time  `json:"expiry"`
}

// Active reports whether the lease still holds at now.
func (l Lease) Active(now time.Time) bool { return now.Before(l.Expiry) }

// sortLeases orders leases by address, the order `stats` shows them in.
func sortLeases(ls []Lease) {
	sort.Slice(ls, func(i, j int) bool { return ls[i].Addr.Less(ls[j].Addr) })
}

// SaveLeases writes leases as JSON to path, atomically (mode 0600),
// creating its directory.
func SaveLeases(path string, ls []Lease) error { return statefile.WriteJSON(path, ls) }

// MaxLeaseFile bounds a lease table's file: a /24 of leases is some 40 KB.
const MaxLeaseFile = 1 << 20

// LoadLeases reads leases written by SaveLeases. A missing file is an
// empty table: the first run.
func LoadLeases(path string) ([]Lease, error) {
	b, err := readlimit.ReadFile(path, MaxLeaseFile)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ls []Lease
	if err := json.Unmarshal(b, &ls); err != nil {
		return nil, fmt.Errorf("lan: lease table %s: %w", path, err)
	}
	return ls, nil
}
