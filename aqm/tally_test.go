package aqm

import "testing"

func TestByECNAddAndTotal(t *testing.T) {
	var c ByECN
	for _, p := range []struct {
		e ECN
		n int
	}{{NotECT, 100}, {ECT1, 200}, {ECT1, 300}, {ECT0, 400}, {CE, 1500}} {
		c.Add(p.e, p.n)
	}
	want := ByECN{NotECT: Tally{1, 100}, ECT1: Tally{2, 500}, ECT0: Tally{1, 400}, CE: Tally{1, 1500}}
	if c != want {
		t.Errorf("after Add: %+v, want %+v", c, want)
	}
	if got := c.Total(); got != (Tally{5, 2500}) {
		t.Errorf("Total = %+v, want {5 2500}", got)
	}
	arr := [4]Tally{NotECT: {1, 100}, ECT1: {2, 500}, ECT0: {1, 400}, CE: {1, 1500}}
	if got := ByECNOf(&arr); got != want {
		t.Errorf("ByECNOf = %+v, want %+v", got, want)
	}
}
