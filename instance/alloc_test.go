package instance

import (
	"testing"

	"github.com/pi2hop/pi2hop/topology"
)

// TestOwnSlotIsTheGatewaysOwn: the gateway's first choice is the slot a
// cleanup without the state file sweeps (topology.GatewaySlot).
func TestOwnSlotIsTheGatewaysOwn(t *testing.T) {
	for _, name := range []string{"pi2hop", "a", "lab-0", "x.y_z"} {
		if got, want := OwnSlot(name, topology.GatewaySlots), topology.GatewaySlot(name); got != want {
			t.Errorf("%s: own slot %d, gateway's %d", name, got, want)
		}
	}
	// FNV-1a of "a" is 0xe40c292c (the hash's published test vector).
	if got := OwnSlot("a", 254); got != 0xe40c292c%254+1 {
		t.Errorf(`OwnSlot("a", 254) = %d, want %d`, got, 0xe40c292c%254+1)
	}
}
