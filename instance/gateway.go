package instance

import (
	"context"
	"fmt"
	"strings"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/topology"
)

// Gateway puts the instance between two interfaces of this box (pi2hop
// run): see topology.Gateway.
type Gateway struct {
	LAN, WAN       string
	FirewallAccept bool // accept rules where a firewall drops forwarding (topology.GatewaySpec)
	g              *topology.Gateway
}

func (t *Gateway) Kind() string { return "gateway" }

func (t *Gateway) Start(ctx context.Context, env *Env) (*hop.Hop, error) {
	slot, err := gatewaySlot(env)
	if err != nil {
		return nil, err
	}
	g, err := topology.NewGateway(ctx, topology.GatewaySpec{Name: env.Name, Slot: slot, LAN: t.LAN, WAN: t.WAN, Journal: env.Journal, Tap: env.Tap(""), FirewallAccept: t.FirewallAccept}, env.Config)
	if err != nil {
		return nil, err
	}
	t.g = g
	return g.Hop, nil
}

// gatewaySlot allocates the gateway's routing tables and rule priority
// among instances, past any priority the system's rules already use.
func gatewaySlot(env *Env) (int, error) {
	slot, err := env.Slot(SpaceGateway, topology.GatewaySlots, func(n int) (bool, error) {
		_, _, prio := topology.GatewayTablesAt(n)
		used, err := netsys.RulePriorityUsed(prio)
		return !used, err
	})
	if err != nil {
		return 0, fmt.Errorf("gateway tables: %w", err)
	}
	return slot, nil
}

func (t *Gateway) Attrs() []any {
	return append([]any{"lan", t.g.LAN, "wan", t.g.WAN, "tun_up", t.g.UpDev, "tun_down", t.g.DownDev,
		"tables", fmt.Sprintf("%d,%d", t.g.UpTable, t.g.DownTable), "rule_pref", t.g.RulePriority}, acceptedAttrs(t.g)...)
}

// acceptedAttrs names the firewall chains the gateway put accept rules
// into, for the start-up line: a firewall changed is said out loud.
func acceptedAttrs(g *topology.Gateway) []any {
	if len(g.Accepted) == 0 {
		return nil
	}
	return []any{"firewall_accept", acceptedWhere(g)}
}

// acceptedWhere lists the chains, "; "-separated.
func acceptedWhere(g *topology.Gateway) string {
	var where []string
	for _, a := range g.Accepted {
		where = append(where, a.String())
	}
	return strings.Join(where, "; ")
}

// acceptedLines is the same for the start-up message a person reads.
func acceptedLines(g *topology.Gateway) []string {
	if len(g.Accepted) == 0 {
		return nil
	}
	return []string{"firewall: forwarding accepted in " + acceptedWhere(g) + " (removed on exit; --firewall-accept=false leaves it alone)"}
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
