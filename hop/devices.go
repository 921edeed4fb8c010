package hop

import "github.com/pi2hop/pi2hop/tun"

// Devices returns the hop's two devices (client side, server side), for
// their backend and offload counters (tun.Describer, tun.OffloadCounter).
// The hop owns them: callers must not read, write or close them.
func (h *Hop) Devices() (up, down tun.Device) { return h.up, h.down }
