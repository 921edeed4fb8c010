package hop

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
	if n := len(GatewayLeftovers("pi2hop")); n != 4 {
		t.Errorf("%d leftover rules, want 4 (2 tables × IPv4, IPv6)", n)
	}
}
