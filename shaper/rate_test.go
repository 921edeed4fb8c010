package shaper

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestConstFinish(t *testing.T) {
	tests := []struct {
		bps   uint64
		start int64
		n     int
		want  int64
	}{
		{10_000_000, 0, 1500, 1_200_000},                // 12000 bits at 10 Mbit/s = 1.2 ms
		{10_000_000, 5, 1500, 1_200_005},                // absolute: start + duration
		{1_000_000_000, 0, 1500, 12_000},                // 12 µs
		{1_000_000_000, 0, 1, 8},                        // 8 ns
		{3_000_000, 0, 1, 2667},                         // 8000/3 = 2666.67 -> ceil
		{100_000_000_000, 0, 1, 1},                      // 0.08 ns -> ceil to 1
		{100_000_000_000, 0, 65536, 5243},               // 5242.88 -> 5243
		{1, 0, 65536, 524_288_000_000_000},              // 1 bit/s, 64 KiB: no overflow
		{1, 0, math.MaxInt32, Never},                    // past int64 time: saturates
		{7, 1 << 40, 65535, 1<<40 + 74_897_142_857_143}, // 524280e9/7 = 74897142857142.86 -> ceil
		{0, 0, 1500, Never},                             // zero rate never finishes
		{10_000_000, 42, 0, 42},                         // empty packet takes no time
		{10_000_000, Never - 10, 1500, Never},           // saturates near the end of time
	}
	for _, tt := range tests {
		got := Const{tt.bps}.Finish(tt.start, tt.n)
		if got != tt.want {
			t.Errorf("Const{%d}.Finish(%d, %d) = %d; want %d", tt.bps, tt.start, tt.n, got, tt.want)
		}
	}
}

// mahimahiDeliveries is a slow model of mm-link's LinkQueue with every
// packet queued from time 0: it spends delivery opportunities in order,
// moving each opportunity's surplus to the next packet, and returns the ms
// at which each packet is delivered.
func mahimahiDeliveries(times []int64, sizes []int) []int64 {
	period := times[len(times)-1]
	out := make([]int64, 0, len(sizes))
	left := 0 // bytes still to send of packet len(out)
	if len(sizes) > 0 {
		left = sizes[0]
	}
	for loop := int64(0); len(out) < len(sizes); loop++ {
		for _, ms := range times {
			credit := oppBytes
			for credit > 0 && len(out) < len(sizes) {
				used := min(credit, left)
				credit -= used
				left -= used
				if left == 0 {
					out = append(out, loop*period+ms)
					if len(out) < len(sizes) {
						left = sizes[len(out)]
					}
				}
			}
		}
	}
	return out
}

func traceOf(t testing.TB, text string) *Trace {
	t.Helper()
	r, err := ParseMahimahi(strings.NewReader(text))
	if err != nil {
		t.Fatalf("ParseMahimahi(%q): %v", text, err)
	}
	return r.(*Trace)
}

func TestTraceFinish(t *testing.T) {
	tests := []struct {
		name  string
		trace string
		start int64
		n     int
		want  int64
	}{
		{"first opportunity at 1 ms", "1\n", 0, 1500, 1_000_000 + 1500},
		{"start at the opportunity uses it", "1\n", 1_000_000, 1500, 1_000_000 + 1500},
		{"start inside the burst uses the rest", "1\n", 1_000_400, 1100, 1_000_000 + 1500},
		{"too little left: spans into the next", "1\n", 1_000_400, 1500, 2_000_000 + 400},
		{"burst over: credit lost", "1\n", 1_001_500, 1500, 2_000_000 + 1500},
		{"small packet", "1\n", 0, 100, 1_000_000 + 100},
		{"3000 bytes need two opportunities", "1\n", 0, 3000, 2_000_000 + 1500},
		{"repeated ms queue behind each other", "5\n5\n5\n10\n", 0, 4000, 5_000_000 + 4000},
		{"gap to the next ms with credit", "5\n5\n10\n", 5_003_000, 100, 10_000_000 + 100},
		{"loops with the last timestamp as period", "2\n3\n", 3_500_000, 100, 5_000_000 + 100},
		{"second loop", "2\n3\n", 4 * 1_000_000, 3000, 6_000_000 + 1500},
		// 0 ms opens each loop and meets the previous loop's last timestamp.
		{"zero opens loop 0", "0\n2\n", 0, 100, 100},
		{"merged at the loop boundary", "0\n2\n", 2_000_000 + 1500, 1500, 2_000_000 + 3000},
		{"after the merged burst", "0\n2\n", 2_003_000, 100, 4_000_000 + 100},
		{"negative start counts from 0", "1\n", -5, 1500, 1_000_000 + 1500},
		{"empty packet", "1\n", 7, 0, 7},
	}
	for _, tt := range tests {
		got := traceOf(t, tt.trace).Finish(tt.start, tt.n)
		if got != tt.want {
			t.Errorf("%s: Finish(%d, %d) on %q = %d; want %d", tt.name, tt.start, tt.n, tt.trace, got, tt.want)
		}
	}
}

// TestTraceMatchesMahimahi checks the byte-credit model against mm-link's
// delivery times for a backlogged link: each packet starts when the
// previous finishes and must be delivered in the same ms as in mahimahi.
func TestTraceMatchesMahimahi(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		var times []int64
		ms := int64(rng.IntN(3))
		for range 1 + rng.IntN(40) {
			times = append(times, ms)
			ms += int64(rng.IntN(4)) // 0: several opportunities in one ms
		}
		if times[len(times)-1] == 0 {
			times = append(times, 1)
		}
		var text strings.Builder
		for _, ms := range times {
			text.WriteString(strconv.FormatInt(ms, 10) + "\n")
		}
		tr := traceOf(t, text.String())
		sizes := make([]int, 300)
		for i := range sizes {
			sizes[i] = []int{40, 64, 576, 1200, 1500, 1500}[rng.IntN(6)]
		}
		want := mahimahiDeliveries(times, sizes)
		start := int64(0)
		for i, n := range sizes {
			fin := tr.Finish(start, n)
			if fin/nsPerMs != want[i] || fin < start {
				t.Fatalf("trial %d trace %v: packet %d (%d B) from %d finishes at %d (ms %d); mahimahi delivers at ms %d",
					trial, times, i, n, start, fin, fin/nsPerMs, want[i])
			}
			start = fin
		}
	}
}

func TestScheduleFinish(t *testing.T) {
	const ms = int64(1_000_000)
	steps := func(s ...Step) *Schedule {
		sc, err := NewSchedule(s)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	gap := steps(Step{0, 10_000_000}, Step{1000 * ms, 0}, Step{2000 * ms, 10_000_000})
	up := steps(Step{0, 10_000_000}, Step{1000 * ms, 20_000_000})
	odd := steps(Step{0, 3_000_000}, Step{10, 7_000_000})
	tests := []struct {
		name  string
		s     *Schedule
		start int64
		n     int
		want  int64
	}{
		{"within the first step", gap, 0, 1500, 1_200_000},
		{"a zero rate pauses the packet", gap, 1000*ms - ms/2, 1500, 2000*ms + 700_000},
		{"starting in the pause waits for the next step", gap, 1500 * ms, 1500, 2000*ms + 1_200_000},
		{"the last rate holds forever", gap, 5000 * ms, 1500, 5000*ms + 1_200_000},
		{"rate doubles mid-packet", up, 1000*ms - 600_000, 1500, 1000*ms + 300_000},
		// 10 ns at 3 Mbit/s send 0.03 bit·1e9... exactly: need 8e9 bit·ns/s,
		// 10 ns supply 3e7, the rest 7.97e9 at 7e6 b/s takes 1138.57 ns -> 1139.
		{"one ceil at the end, not per step", odd, 0, 1, 10 + 1139},
		{"before time 0 uses the first rate", gap, -1_200_000, 1500, 0},
		{"empty packet", gap, 3, 0, 3},
		{"zero rate forever never finishes", steps(Step{0, 1e6}, Step{ms, 0}), 0, 1500, Never},
	}
	for _, tt := range tests {
		if got := tt.s.Finish(tt.start, tt.n); got != tt.want {
			t.Errorf("%s: Finish(%d, %d) = %d; want %d", tt.name, tt.start, tt.n, got, tt.want)
		}
	}
}

// A one-step schedule must time every packet exactly as Const does.
func TestScheduleMatchesConst(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		bps := 1 + rng.Uint64N(100_000_000_000)
		sc, _ := NewSchedule([]Step{{0, bps}})
		start, n := rng.Int64N(1<<50), 1+rng.IntN(65536)
		if a, b := sc.Finish(start, n), (Const{bps}).Finish(start, n); a != b {
			t.Fatalf("bps %d start %d n %d: schedule %d, const %d", bps, start, n, a, b)
		}
	}
}

func TestNewScheduleErrors(t *testing.T) {
	tests := []struct {
		steps []Step
		want  string
	}{
		{nil, "rate schedule: no steps"},
		{[]Step{{5, 1}}, "rate schedule: the first step must be at time 0, not 5ns"},
		{[]Step{{0, 1}, {0, 2}}, "rate schedule: step 2 at 0s is not after step 1 at 0s (times must increase)"},
	}
	for _, tt := range tests {
		if _, err := NewSchedule(tt.steps); err == nil || err.Error() != tt.want {
			t.Errorf("NewSchedule(%v) error = %v; want %q", tt.steps, err, tt.want)
		}
	}
}

func TestParseRateCSV(t *testing.T) {
	r, err := ParseRateCSV(strings.NewReader("time,rate\r\n# comment\n0, 10mbit\n\n2s,5mbit\n2.5,1gbit\n3500ms,0\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Step{{0, 10_000_000}, {2e9, 5_000_000}, {2.5e9, 1_000_000_000}, {3.5e9, 0}}
	got := r.(*Schedule).steps
	if len(got) != len(want) {
		t.Fatalf("steps = %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d = %v; want %v", i, got[i], want[i])
		}
	}
	// Without a header, bare bits/s.
	if r, err := ParseRateCSV(strings.NewReader("0,1000000\n")); err != nil || r.Finish(0, 125) != 1_000_000 {
		t.Errorf("headerless CSV: %v, %v", r, err)
	}
}

func TestParseErrors(t *testing.T) {
	tooDense := strings.Repeat("1\n", maxOppsPerMs+1)
	wrapDense := strings.Repeat("0\n", 400) + strings.Repeat("5\n", 300)
	tests := []struct {
		format string // "csv" or "mm"
		in     string
		want   string
	}{
		{"csv", "0,10mb\n", `line 1, column 2: rate "10mb": unknown unit "mb" (want bit, kbit`},
		{"csv", "time,rate\n0,1mbit\nabc\n", "line 3: 1 fields: want time,rate (e.g. 0,10mbit or 500ms,2mbit)"},
		{"csv", "0,1mbit,2\n", "line 1: 3 fields: want time,rate"},
		{"csv", "0,1mbit\n2s,1mbit\n\n1s,1mbit\n", "line 4: time 1s is not after line 2's 2s (times must increase)"},
		{"csv", "1s,1mbit\n", "line 1: the first row must be at time 0, not 1s"},
		{"csv", "0,1mbit\n5q,1mbit\n", `line 2, column 1: time "5q": want seconds (1.5) or a duration (500ms, 2s)`},
		{"csv", "0,1mbit\n-1,1mbit\n", `line 2, column 1: time "-1": negative`},
		{"csv", "time,rate\n", "no rows (want lines of time,rate, e.g. 0,10mbit)"},
		{"mm", "1\n2\nx\n", `line 3: "x": want a whole number of milliseconds`},
		{"mm", "1\n2\n-3\n", `line 3: "-3": want a whole number of milliseconds`},
		{"mm", "5\n\n3\n", "line 3: 3 ms is before the previous line's 5 ms (timestamps must not decrease)"},
		{"mm", "", "no timestamps (want one integer ms per line"},
		{"mm", "0\n0\n", "the last timestamp is 0 ms: a trace must last a non-zero time"},
		{"mm", tooDense, "line 667: more than 666 opportunities at 1 ms (8 Gbit/s) are not supported"},
		{"mm", wrapDense, "line 700: 300 opportunities at 5 ms plus 400 at 0 ms meet when the trace loops"},
		{"mm", "99999999999\n", "line 1: 99999999999 ms: traces longer than 16777216 ms are not supported"},
	}
	for _, tt := range tests {
		parse := ParseMahimahi
		if tt.format == "csv" {
			parse = ParseRateCSV
		}
		_, err := parse(strings.NewReader(tt.in))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s %q: error = %v; want prefix %q", tt.format, tt.in, err, tt.want)
		}
	}
}

func TestLoadRateTrace(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mm := write("cell.up", "# mahimahi\n1\n1\n2\n")
	r, err := LoadRateTrace(mm)
	if _, ok := r.(*Trace); !ok || err != nil {
		t.Errorf("LoadRateTrace(mahimahi) = %T, %v", r, err)
	}
	csv := write("steps.csv", "\n0,10mbit\n1s,2mbit\n")
	r, err = LoadRateTrace(csv)
	if _, ok := r.(*Schedule); !ok || err != nil {
		t.Errorf("LoadRateTrace(csv) = %T, %v", r, err)
	}
	bad := write("bad.csv", "time,rate\n0,10mbit\n1s,fast\n")
	_, err = LoadRateTrace(bad)
	want := "rate trace " + bad + `: line 3, column 2: rate "fast": want a non-negative number`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("bad CSV error = %v; want prefix %q", err, want)
	}
	_, err = LoadRateTrace(filepath.Join(dir, "missing"))
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing file error = %v", err)
	}
}

// A trace is read to a limit: a file without line ends (/dev/zero, a
// sparse file) stops at the first line's limit, one of blank lines at the
// file's, each named in the error.
func TestLoadRateTraceLimits(t *testing.T) {
	dir := t.TempDir()
	blank := filepath.Join(dir, "blank")
	if err := os.WriteFile(blank, bytes.Repeat([]byte{'\n'}, MaxRateTraceBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse")
	if f, err := os.Create(sparse); err != nil {
		t.Fatal(err)
	} else {
		f.Truncate(1 << 30)
		f.Close()
	}
	for _, tt := range []struct{ path, want string }{
		{"/dev/zero", "rate trace /dev/zero: line 1: longer than 65536 bytes, the limit for a line"},
		{sparse, "rate trace " + sparse + ": line 1: longer than 65536 bytes, the limit for a line"},
		{blank, "rate trace " + blank + ": larger than 32 MiB, the limit for a rate trace"},
	} {
		if _, err := LoadRateTrace(tt.path); err == nil || err.Error() != tt.want {
			t.Errorf("LoadRateTrace(%s): %v, want %q", tt.path, err, tt.want)
		}
	}
}

func TestRateStrings(t *testing.T) {
	tests := []struct {
		r    interface{ String() string }
		want string
	}{
		{Const{10_000_000}, "10mbit"},
		{traceOf(t, "1\n1\n2\n"), "mahimahi trace: 3 opportunities per 2 ms loop (mean 18mbit)"},
	}
	for _, tt := range tests {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("String() = %q; want %q", got, tt.want)
		}
	}
	sc, _ := NewSchedule([]Step{{0, 1e7}, {1.5e9, 0}})
	if got, want := sc.String(), "rate schedule: 0s 10mbit 1.5s 0bit"; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
}

// Rates are the same when they time every packet alike, whether or not
// they are one value: a trace parsed twice is one rate.
func TestSameRate(t *testing.T) {
	trace := func(text string) Rate {
		r, err := ParseMahimahi(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	sched := func(steps ...Step) Rate {
		s, err := NewSchedule(steps)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := trace("1\n2\n2\n4\n")
	for _, tt := range []struct {
		a, b Rate
		same bool
	}{
		{Const{BitsPerSecond: 10}, Const{BitsPerSecond: 10}, true},
		{Const{BitsPerSecond: 10}, Const{BitsPerSecond: 11}, false},
		{Unlimited{}, Unlimited{}, true},
		{Unlimited{}, Const{}, false},
		{a, a, true},
		{a, trace("1\n2\n2\n4\n"), true},
		{a, trace("1\n2\n4\n"), false},
		{a, Const{BitsPerSecond: 10}, false},
		{sched(Step{0, 5}, Step{10, 6}), sched(Step{0, 5}, Step{10, 6}), true},
		{sched(Step{0, 5}, Step{10, 6}), sched(Step{0, 5}, Step{11, 6}), false},
		{sched(Step{0, 5}), a, false},
		{nil, nil, true},
		{nil, Const{}, false},
	} {
		if got := SameRate(tt.a, tt.b); got != tt.same {
			t.Errorf("SameRate(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
}
