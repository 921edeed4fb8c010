package instance

import (
	"fmt"
	"hash/fnv"
	"sync"

	"github.com/pi2hop/pi2hop/netsys"
)

// Spaces that instances allocate from among themselves (Env.Slot). The
// names of namespaces, devices and nftables tables need none: they
// derive from the instance name, which claim takes under the same lock.
const (
	// SpaceSubnet: shell N gets 10.254.N.0/24 and fd00:254:N::/64.
	SpaceSubnet = "subnet"
	// SpaceGateway: a gateway's routing tables and rule priority
	// (topology.GatewayTablesAt).
	SpaceGateway = "gateway"
	// SpaceShareLAN: a share's LAN subnet, slot N the Nth of
	// lan.DefaultSubnets (192.168.2.0/24 first, not by name: the subnet a
	// Mac's Internet Sharing uses is what a person expects).
	SpaceShareLAN = "share-lan"
)

// claimed is the state file of the instance that claimed its name: the
// journal and Slot both write it, one at a time.
type claimed struct {
	name string
	mu   sync.Mutex
	st   State
}

// save changes the state with f and writes it.
func (c *claimed) save(f func(st *State)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(&c.st)
	return WriteState(c.name, &c.st)
}

// Slot allocates a slot of space (numbered 1 to n) for this instance and
// returns it. Slots are taken under RunDir's lock and recorded in the
// state file before the lock is released, so instances starting at the
// same instant get different ones; an instance's slots are free again when
// its state file goes (on exit, or by its cleanup) or its process is gone.
// The search starts from the instance name's hash and steps to the next
// slot (linear probing) past those another live instance holds and those
// free (nil: all) refuses (the system already uses them), so one name
// gets the same slot, and so the same addresses, whenever it is free.
func (e *Env) Slot(space string, n int, free func(slot int) (bool, error)) (int, error) {
	return e.slotFrom(space, n, OwnSlot(e.Name, n), free)
}

// slotFrom is Slot with the search starting at slot first.
func (e *Env) slotFrom(space string, n, first int, free func(slot int) (bool, error)) (int, error) {
	if err := checkRunDir(RunDir); err != nil {
		return 0, err
	}
	unlock, err := netsys.LockDir(RunDir)
	if err != nil {
		return 0, err
	}
	defer unlock()
	held, err := heldSlots(space, e.Name)
	if err != nil {
		return 0, err
	}
	for k := range n {
		slot := (first-1+k)%n + 1
		if held[slot] {
			continue
		}
		if free != nil {
			ok, err := free(slot)
			if err != nil {
				return 0, fmt.Errorf("%s slot %d: %w", space, slot, err)
			}
			if !ok {
				continue
			}
		}
		if e.claim != nil {
			if err := e.claim.save(func(st *State) {
				if st.Slots == nil {
					st.Slots = map[string]int{}
				}
				st.Slots[space] = slot
			}); err != nil {
				return 0, err
			}
		}
		return slot, nil
	}
	return 0, fmt.Errorf("no free %s slot: all %d are taken by running instances or in use on this system", space, n)
}

// heldSlots are the slots of space that live instances other than self
// hold. A dead instance's are free: what it left on the system that
// still collides is for the caller's free function to see.
func heldSlots(space, self string) (map[int]bool, error) {
	names, err := stateNames(RunDir)
	if err != nil {
		return nil, err
	}
	held := map[int]bool{}
	for _, name := range names {
		if name == self {
			continue
		}
		st, err := ReadState(name)
		if err != nil || !st.Alive() {
			continue
		}
		if s, ok := st.Slots[space]; ok {
			held[s] = true
		}
	}
	return held, nil
}

// OwnSlot is the slot of a space of n that instance name asks for first:
// its FNV-1a hash modulo n, plus 1. For the gateway's space it is
// topology.GatewaySlot, which a cleanup without a state file relies on.
func OwnSlot(name string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int(h.Sum32()%uint32(n)) + 1
}
