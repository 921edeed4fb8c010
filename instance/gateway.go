package instance

import (
	"context"
	"fmt"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/topology"
)

// Gateway puts the instance between two interfaces of this box (pi2hop
// run): see topology.Gateway.
type Gateway struct {
	LAN, WAN string
	g        *topology.Gateway
}

func (t *Gateway) Kind() string { return "gateway" }

func (t *Gateway) Start(ctx context.Context, env *Env) (*hop.Hop, error) {
	g, err := topology.NewGateway(ctx, topology.GatewaySpec{Name: env.Name, LAN: t.LAN, WAN: t.WAN, Journal: env.Journal, Tap: env.Tap("")}, env.Config)
	if err != nil {
		return nil, err
	}
	t.g = g
	return g.Hop, nil
}

func (t *Gateway) Attrs() []any {
	return []any{"lan", t.g.LAN, "wan", t.g.WAN, "tun_up", t.g.UpDev, "tun_down", t.g.DownDev,
		"tables", fmt.Sprintf("%d,%d", t.g.UpTable, t.g.DownTable), "rule_pref", t.g.RulePriority}
}

// Wait returns when ctx is done or the hop stops on its own (a device
// failed).
func (t *Gateway) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-t.g.Done():
		return t.g.Err()
	}
}

func (t *Gateway) Close() error {
	if t.g == nil {
		return nil
	}
	return t.g.Close()
}
