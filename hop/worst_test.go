package hop

import "testing"

func TestWorst(t *testing.T) {
	var w Worst
	snap := func() Worst { return w }
	start := snap()
	w.Add(5)
	w.Add(3)
	w.Close() // interval 1: 5
	a := snap()
	w.Add(2)
	w.Close() // interval 2: 2
	w.Add(4)
	w.Close() // interval 3: 4
	b := snap()
	w.Add(9)
	w.Close() // interval 4: 9
	c := snap()
	tests := []struct {
		name        string
		from, to    Worst
		want        int64
		wantOK      bool
		wantRunWide int64
	}{
		{"first interval", start, a, 5, true, 5},
		{"two later intervals below the run's worst", a, b, 4, true, 5},
		{"nothing closed", b, b, 0, true, 5},
		{"a new worst", b, c, 9, true, 9},
		{"whole run", start, c, 9, true, 9},
	}
	for _, tt := range tests {
		got, ok := tt.to.Since(&tt.from)
		if got != tt.want || ok != tt.wantOK || tt.to.Max != tt.wantRunWide {
			t.Errorf("%s: Since = %d, %v (Max %d), want %d, %v (Max %d)", tt.name, got, ok, tt.to.Max, tt.want, tt.wantOK, tt.wantRunWide)
		}
	}
}

// TestWorstRingOverrun: once more intervals closed than the ring holds,
// Since says so, and still answers with what the ring has.
func TestWorstRingOverrun(t *testing.T) {
	var w Worst
	w.Add(100)
	w.Close()
	from := w
	for i := range worstRing + 10 {
		w.Add(int64(i % 50))
		w.Close()
	}
	got, ok := w.Since(&from)
	if ok || got != 49 {
		t.Errorf("Since after %d intervals = %d, %v; want 49, false", worstRing+10, got, ok)
	}
}
