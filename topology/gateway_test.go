package topology

import "testing"

func TestGatewayTablesStable(t *testing.T) {
	u1, d1, p1 := GatewayTables("pi2hop")
	u2, d2, p2 := GatewayTables("pi2hop")
	u3, _, _ := GatewayTables("other")
	if u1 != u2 || d1 != d2 || p1 != p2 || d1 != u1+1 || u1 == u3 {
		t.Errorf("tables %d %d %d / %d %d %d / %d", u1, d1, p1, u2, d2, p2, u3)
	}
	if p1 <= 0 || p1 >= 32766 {
		t.Errorf("rule priority %d must sit between local (0) and main (32766)", p1)
	}
	if n := len(GatewayLeftovers("pi2hop")); n != 0 {
		t.Errorf("%d leftover rules without interfaces, want 0: a rule is only ours on our interfaces", n)
	}
	es := GatewayLeftovers("pi2hop", "eth1", "eth0")
	if len(es) != 8 {
		t.Fatalf("%d leftover rules for 2 interfaces, want 8 (2 interfaces × 2 tables × IPv4, IPv6)", len(es))
	}
	for _, e := range es {
		if (e.Name != "eth1" && e.Name != "eth0") || e.Priority != p1 || (e.Table != u1 && e.Table != d1) {
			t.Errorf("leftover %s: want iif eth0 or eth1, pref %d, table %d or %d", e, p1, u1, d1)
		}
	}
}

// TestGatewayTablesAt: slot 1 is the first pair of tables at 0x7000 and
// priority 9000; the last slot stays below the main table's rule.
func TestGatewayTablesAt(t *testing.T) {
	for _, c := range []struct{ slot, up, down, prio int }{
		{1, 0x7000, 0x7001, 9000},
		{2, 0x7002, 0x7003, 9001},
		{GatewaySlots, 0x7000 + 8190, 0x7000 + 8191, 13095},
	} {
		if up, down, prio := GatewayTablesAt(c.slot); up != c.up || down != c.down || prio != c.prio {
			t.Errorf("slot %d: tables %d, %d, pref %d; want %d, %d, %d", c.slot, up, down, prio, c.up, c.down, c.prio)
		}
	}
}
