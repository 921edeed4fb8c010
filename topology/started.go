package topology

import (
	"context"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/tunpair"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/tun"
)

// startHop builds the hop between a topology's two devices (client side
// first), installs tap and starts it in its own goroutine.
func startHop(ctx context.Context, cfg hop.Config, devs []tun.Device, tap hop.Tap, j *netsys.Journal) (*hop.Hop, *tunpair.Running, error) {
	h, err := hop.New(cfg, devs[0], devs[1])
	if err != nil {
		return nil, nil, err
	}
	if tap != nil {
		h.SetTap(tap)
	}
	return h, tunpair.Start(ctx, h, j, h.Config().Logger), nil
}

// mtuOf is the MTU of the devices a hop of cfg forwards between.
func mtuOf(cfg hop.Config) int {
	if cfg.MTU == 0 {
		return hop.DefaultMTU
	}
	return cfg.MTU
}

// OpenTUN opens TUN device name with backend b inside namespace ns ("" =
// the host's), recorded in j first (see tunpair.OpenTUN).
func OpenTUN(j *netsys.Journal, ns, name string, mtu int, b tun.Backend) (tun.Device, error) {
	return tunpair.OpenTUN(j, ns, name, mtu, b)
}
