package web

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/rtt"
)

func TestGuard(t *testing.T) {
	type req struct {
		name, method, target, host, origin, header string
		body                                       string
		want                                       int
	}
	edit := `{"rate":"5mbit"}`
	tests := []struct {
		addr, token string
		reqs        []req
	}{
		{"127.0.0.1:8080", "", []req{
			{"page", "GET", "/", "127.0.0.1:8080", "", "", "", 200},
			{"asset", "GET", "/assets/app.js", "localhost:8080", "", "", "", 200},
			{"uplot", "GET", "/assets/uplot/uPlot.iife.min.js", "[::1]:8080", "", "", "", 200},
			{"rebinding name", "GET", "/", "evil.example:8080", "", "", "", 403},
			{"unknown path", "GET", "/nope", "127.0.0.1:8080", "", "", "", 404},
			{"source file", "GET", "/assets/web.go", "127.0.0.1:8080", "", "", "", 404},
			{"source tree", "GET", "/web.go", "127.0.0.1:8080", "", "", "", 404},
			{"set by GET", "GET", "/set", "127.0.0.1:8080", "", "", "", 405},
			{"set without Origin", "POST", "/set", "127.0.0.1:8080", "", "", edit, 403},
			{"set from another origin", "POST", "/set", "127.0.0.1:8080", "http://evil.example", "", edit, 403},
			{"set from the page", "POST", "/set", "127.0.0.1:8080", "http://127.0.0.1:8080", "", edit, 200},
			{"set nothing", "POST", "/set", "127.0.0.1:8080", "http://127.0.0.1:8080", "", `{}`, 400},
			{"set a bad rate", "POST", "/set", "127.0.0.1:8080", "http://127.0.0.1:8080", "", `{"rate":"fast"}`, 400},
			{"set an unknown field", "POST", "/set", "127.0.0.1:8080", "http://127.0.0.1:8080", "", `{"aqm":"fifo"}`, 400},
		}},
		{"0.0.0.0:8080", "s3cret", []req{
			{"page without token", "GET", "/", "192.0.2.1:8080", "", "", "", 401},
			{"page, wrong token", "GET", "/?token=nope", "192.0.2.1:8080", "", "", "", 401},
			{"page, token in URL", "GET", "/?token=s3cret", "192.0.2.1:8080", "", "", "", 200},
			{"events without token", "GET", "/events", "192.0.2.1:8080", "", "", "", 401},
			{"download without token", "GET", "/download.csv", "192.0.2.1:8080", "", "", "", 401},
			{"download, token in header", "GET", "/download.csv", "192.0.2.1:8080", "", "s3cret", "", 200},
			{"unknown path with token", "GET", "/x?token=s3cret", "192.0.2.1:8080", "", "", "", 404},
			{"set without token", "POST", "/set", "192.0.2.1:8080", "http://192.0.2.1:8080", "", edit, 401},
			{"set, token, other origin", "POST", "/set", "192.0.2.1:8080", "http://evil.example", "s3cret", edit, 403},
			{"set, token, same origin", "POST", "/set", "192.0.2.1:8080", "http://192.0.2.1:8080", "s3cret", edit, 200},
		}},
	}
	for _, tc := range tests {
		src := newFake(10e6, nil)
		s, err := New(Options{Addr: tc.addr, Token: tc.token}, src)
		if err != nil {
			t.Fatal(err)
		}
		h := s.Handler()
		posted := 0
		for _, r := range tc.reqs {
			req := httptest.NewRequest(r.method, r.target, strings.NewReader(r.body))
			req.Host = r.host
			if r.origin != "" {
				req.Header.Set("Origin", r.origin)
			}
			if r.header != "" {
				req.Header.Set(TokenHeader, r.header)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != r.want {
				t.Errorf("%s: %s %s %s: status %d, want %d (%s)", tc.addr, r.name, r.method, r.target, w.Code, r.want, strings.TrimSpace(w.Body.String()))
			}
			if r.want == 200 && r.method == "POST" {
				posted++
			}
		}
		if len(src.sets) != posted {
			t.Errorf("%s: the source got %d edits, want %d (one per accepted POST)", tc.addr, len(src.sets), posted)
		}
		if posted > 0 && (src.sets[0].Rate == nil || *src.sets[0].Rate != 5_000_000) {
			t.Errorf("%s: edit %+v, want rate 5000000 bit/s", tc.addr, src.sets[0])
		}
	}
}

func TestTokenRequiredBeyondLoopback(t *testing.T) {
	tests := []struct {
		addr, token string
		generated   bool
	}{
		{"", "", false},
		{":9000", "", false},
		{"127.0.0.1:9000", "", false},
		{"[::1]:9000", "", false},
		{"localhost:9000", "", false},
		{"0.0.0.0:9000", "", true},
		{"192.0.2.1:9000", "", true},
		{"[::]:9000", "", true},
		{"192.0.2.1:9000", "mine", false},
	}
	for _, tc := range tests {
		s, err := New(Options{Addr: tc.addr, Token: tc.token}, newFake(1e6, nil))
		if err != nil {
			t.Fatalf("%q: %v", tc.addr, err)
		}
		switch {
		case tc.generated && len(s.Token()) != 32:
			t.Errorf("%q: token %q, want a generated one of 32 hex digits", tc.addr, s.Token())
		case !tc.generated && s.Token() != tc.token:
			t.Errorf("%q: token %q, want %q", tc.addr, s.Token(), tc.token)
		}
		if s.Token() != "" && !strings.Contains(s.URL(), "?token="+s.Token()) {
			t.Errorf("%q: URL %s does not carry the token", tc.addr, s.URL())
		}
		// A wildcard is no address to open: the URL names one of the box's.
		if u := s.URL(); strings.Contains(u, "0.0.0.0") || strings.Contains(u, "[::]") {
			t.Errorf("%q: URL %s names the wildcard, want an address of this box", tc.addr, u)
		}
	}
	if _, err := New(Options{Addr: "8080"}, newFake(1e6, nil)); err == nil || !strings.Contains(err.Error(), "host:port") {
		t.Errorf("address 8080: error %v, want one naming the form host:port", err)
	}
}

func TestEditSettings(t *testing.T) {
	tests := []struct {
		edit    Edit
		rate    int64 // -1: not set
		delay   time.Duration
		wantErr string
	}{
		{Edit{"rate": "5mbit"}, 5_000_000, -1, ""},
		{Edit{"rate": "500kbit"}, 500_000, -1, ""},
		{Edit{"rate": "1mbps"}, 8_000_000, -1, ""}, // tc: mbps is megabytes per second
		{Edit{"rate": "unlimited"}, 0, -1, ""},
		{Edit{"delay": "30ms"}, -1, 30 * time.Millisecond, ""},
		{Edit{"rate": "2mbit", "delay": "1.5s"}, 2_000_000, 1500 * time.Millisecond, ""},
		{Edit{"rate": "fast"}, -1, -1, "rate"},
		{Edit{"rate": "0mbit"}, -1, -1, "rate"},
		{Edit{"delay": "-1ms"}, -1, -1, "delay"},
		{Edit{"delay": "soon"}, -1, -1, "10ms"},
		{Edit{"rate": "1bit"}, -1, -1, "accepted: 8kbit.. or unlimited"},
		{Edit{"delay": "100s"}, -1, -1, "accepted: 0s..10s"},
		{Edit{"down-rate": "5mbit", "delay": "1s"}, -1, time.Second, ""},
		{Edit{"speed": "5mbit"}, -1, -1, "not a setting"},
		{Edit{"mtu": "9000"}, -1, -1, "cannot change"},
	}
	for _, tc := range tests {
		s, err := tc.edit.Settings()
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%+v: error %v, want one mentioning %q", tc.edit, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%+v: %v", tc.edit, err)
			continue
		}
		if (tc.rate < 0) != (s.Rate == nil) || (s.Rate != nil && int64(*s.Rate) != tc.rate) {
			t.Errorf("%+v: rate %v, want %d", tc.edit, s.Rate, tc.rate)
		}
		if (tc.delay < 0) != (s.Delay == nil) || (s.Delay != nil && *s.Delay != tc.delay) {
			t.Errorf("%+v: delay %v, want %v", tc.edit, s.Delay, tc.delay)
		}
	}
}

func TestDirSample(t *testing.T) {
	var prev, cur hop.DirStats
	prev.Elapsed, cur.Elapsed = 1e9, 1.5e9 // half a second
	prev.OutBytes, cur.OutBytes = 1_000_000, 1_250_000
	prev.Link.Busy, cur.Link.Busy = 0.4e9, 0.7e9
	prev.Marked, cur.Marked = 10, 40
	prev.QueueDrops[aqm.ReasonStep], cur.QueueDrops[aqm.ReasonStep] = 5, 5
	cur.QueueDrops[aqm.ReasonCoupled] = 3
	cur.NoBuffer = 1
	prev.Queue.Prob = 0
	cur.Queue.Prob = uint32(aqm.MaxProb / 4)
	// The interval's L sojourns are 99 of 1 ms and one of 9 ms; the C
	// queue forwarded nothing in the interval (its sample before is old).
	prev.SojournC.Add(50e6)
	cur.SojournC.Add(50e6)
	prev.SojournL.Add(30e6)
	cur.SojournL.Add(30e6)
	for range 99 {
		cur.SojournL.Add(1e6)
	}
	cur.SojournL.Add(9e6)
	d := dirSample(&cur, &prev)
	near := func(got, want float64) bool { return got >= want && got <= want*1.016 } // a bucket's upper edge
	if d.Throughput != 4e6 {                                                         // 250000 B in 0.5 s
		t.Errorf("throughput %v bit/s, want 4e6", d.Throughput)
	}
	if d.Util < 0.6-1e-9 || d.Util > 0.6+1e-9 {
		t.Errorf("utilisation %v, want 0.6", d.Util)
	}
	if d.Marks != 60 {
		t.Errorf("marks %v/s, want 60", d.Marks)
	}
	if len(d.Drops) != 2 || d.Drops["coupled"] != 6 || d.Drops["nobuffer"] != 2 {
		t.Errorf("drops %v, want coupled 6/s and nobuffer 2/s only", d.Drops)
	}
	if d.LP50 == nil || !near(*d.LP50, 1) || d.LP99 == nil || !near(*d.LP99, 1) {
		t.Errorf("L p50/p99 %v/%v ms, want 1/1 (rank 99 of 100 is still 1 ms)", d.LP50, d.LP99)
	}
	if d.CP50 != nil || d.CP99 != nil {
		t.Errorf("C sojourn %v/%v, want none: nothing forwarded in the interval", d.CP50, d.CP99)
	}
	if d.Prob < 0.2499 || d.Prob > 0.2501 {
		t.Errorf("prob %v, want 0.25", d.Prob)
	}
}

func TestRingKeepsTheLast(t *testing.T) {
	r := newRing(3)
	for i := range 5 {
		r.add(Sample{T: int64(i)})
	}
	got := r.since(0)
	if len(got) != 3 || got[0].T != 2 || got[2].T != 4 {
		t.Errorf("ring holds %v, want samples 2, 3, 4", got)
	}
	if got := r.since(4); len(got) != 1 {
		t.Errorf("since 4: %d samples, want 1", len(got))
	}
}

// readEvent reads one server-sent event: its name and data.
func readEvent(t *testing.T, br *bufio.Reader) (string, string) {
	t.Helper()
	var name, data string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if name == "" {
				t.Fatalf("an event without a name (data %q)", data)
			}
			return name, data
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if data != "" {
				t.Fatalf("event %s has two data lines", name)
			}
			data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected line %q in the stream", line)
		}
	}
}

func TestStreamAndDownloads(t *testing.T) {
	src := newFake(10e6, threeFlows())
	s, err := Serve(Options{Addr: "127.0.0.1:0", Every: 20 * time.Millisecond}, src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(s.URL() + "events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q, want text/event-stream", ct)
	}
	br := bufio.NewReader(resp.Body)
	name, data := readEvent(t, br)
	var hist []Sample
	if err := json.Unmarshal([]byte(data), &hist); name != "history" || err != nil {
		t.Fatalf("first event %s (%v), want a history of samples", name, err)
	}
	deadline := time.Now().Add(2 * time.Second)
	var samples, tables int
	for (samples < 5 || tables < 1) && time.Now().Before(deadline) {
		name, data := readEvent(t, br)
		switch name {
		case "sample":
			var smp Sample
			if err := json.Unmarshal([]byte(data), &smp); err != nil {
				t.Fatal(err)
			}
			if len(smp.Dirs) != 2 || smp.Dirs[0].Dir != "up" || smp.Dirs[1].Dir != "down" || smp.Dirs[0].Bps != 10e6 {
				t.Fatalf("sample %s: want up and down at 10 Mbit/s", data)
			}
			samples++
		case "table":
			var tb tableEvent
			if err := json.Unmarshal([]byte(data), &tb); err != nil {
				t.Fatal(err)
			}
			if len(tb.Flows) != 3 || tb.Flows[0].Class != "L4S" {
				t.Fatalf("table %s: want the three flows", data)
			}
			tables++
		default:
			t.Fatalf("unexpected event %s", name)
		}
	}
	if samples < 5 || tables < 1 {
		t.Fatalf("waited 2 s for 5 samples and a table at 20 ms intervals: got %d and %d", samples, tables)
	}

	resp2, err := c.Get(s.URL() + "download.json")
	if err != nil {
		t.Fatal(err)
	}
	var dl struct{ Samples []Sample }
	err = json.NewDecoder(resp2.Body).Decode(&dl)
	resp2.Body.Close()
	if err != nil || len(dl.Samples) < 5 {
		t.Fatalf("download.json: %d samples (%v), want at least the 5 streamed", len(dl.Samples), err)
	}
	for i := 1; i < len(dl.Samples); i++ {
		if dl.Samples[i].T < dl.Samples[i-1].T {
			t.Fatalf("download.json: samples out of order at %d", i)
		}
	}
	resp3, err := c.Get(s.URL() + "download.csv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(resp3.Body).ReadAll()
	resp3.Body.Close()
	if err != nil || len(rows) < 11 {
		t.Fatalf("download.csv: %d rows (%v), want a header and two rows per sample", len(rows), err)
	}
	if strings.Join(rows[0], ",") != strings.Join(CSVHeader, ",") {
		t.Errorf("csv header %v, want %v", rows[0], CSVHeader)
	}
	if rows[1][1] != "up" || rows[2][1] != "down" || rows[1][2] != "10000000" {
		t.Errorf("csv rows %v %v: want up then down at 10000000 bit/s", rows[1], rows[2])
	}
}

// A listener on a non-loopback address refuses a request without the
// token on a real socket, as the browser would meet it.
func TestNonLoopbackRefusesWithoutToken(t *testing.T) {
	s, err := Serve(Options{Addr: "0.0.0.0:0"}, newFake(1e6, nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	_, port, _ := strings.Cut(s.ln.Addr().String(), "]:")
	if port == "" {
		_, port, _ = strings.Cut(s.ln.Addr().String(), ":")
	}
	c := &http.Client{Timeout: 5 * time.Second}
	for _, tc := range []struct {
		query string
		want  int
	}{{"", 401}, {"?token=" + s.Token(), 200}} {
		resp, err := c.Get("http://127.0.0.1:" + port + "/" + tc.query)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET /%s: status %d, want %d", tc.query, resp.StatusCode, tc.want)
		}
	}
}

// A lab's view: nothing between runs, and edits refused with the reason.
func TestFollowing(t *testing.T) {
	var f Following
	if _, ok := f.Stats(); ok {
		t.Error("Stats without a hop reports one")
	}
	s, err := New(Options{}, &f)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("POST", "/set", strings.NewReader(`{"rate":"5mbit"}`))
	req.Host = "127.0.0.1:8080"
	req.Header.Set("Origin", "http://127.0.0.1:8080")
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, req)
	if w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "scenario") {
		t.Errorf("set on a lab's view: %d %s, want 409 naming the scenario's flags", w.Code, w.Body.String())
	}
}

// The hop's flow tables become rows: both directions, bytes as read,
// drops of every reason summed.
func TestFlowRows(t *testing.T) {
	var f hop.Flow
	f.Proto, f.Src, f.Dst, f.Class, f.Queue, f.RateBps, f.SojournP99Ms, f.Verdict = "udp", "10.0.0.1:1", "10.0.0.2:2", hop.ClassL4S, "L", 4_000_000, 0.9, "well-behaved"
	f.In.ECT1.Bytes, f.In.CE.Bytes = 1000, 500
	f.Marks = 7
	f.Drops = map[string]uint64{"step": 2, "overload": 3}
	f.RTT = &hop.FlowRTT{ServerHalf: rtt.Figures{N: 1, P50Ms: 10.04, P99Ms: 10.04}}
	rows := flowRows([2]hop.FlowTable{{Dir: "up"}, {Dir: "down", Flows: []hop.Flow{f}}})
	want := Flow{Dir: "down", Proto: "udp", Src: "10.0.0.1:1", Dst: "10.0.0.2:2", Class: "L4S", Queue: "L", Rate: 4e6,
		Bytes: 1500, Marks: 7, Drops: 5, P99: 0.9, RTT: "server 10.0/10.0ms", Verdict: "well-behaved"}
	if len(rows) != 1 || rows[0].RTTP50 == nil || *rows[0].RTTP50 != 10.04 {
		t.Fatalf("rows %+v, want one with the RTT median 10.04", rows)
	}
	rows[0].RTTP50 = nil
	if rows[0] != want {
		t.Errorf("rows %+v, want [%+v]", rows, want)
	}
}

// Behind a token the page's own scripts and styles carry it: a browser
// fetches them without the page's query, and each is served; the same
// files without the token are refused. Without a token the page is the
// embedded file as it is.
func TestPageAssetsCarryToken(t *testing.T) {
	s, err := New(Options{Addr: "192.0.2.1:8080", Token: "t0k&n"}, newFake(1e6, nil))
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	get := func(target string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", target, nil)
		req.Host = "192.0.2.1:8080"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	page := get("/?token=t0k%26n")
	if page.Code != 200 {
		t.Fatalf("page with the token: status %d", page.Code)
	}
	links := regexp.MustCompile(`(?:href|src)="(assets/[^"]*)"`).FindAllStringSubmatch(page.Body.String(), -1)
	if len(links) != 4 {
		t.Fatalf("%d asset links in the page, want 4 (two scripts, two styles): %v", len(links), links)
	}
	for _, l := range links {
		u := l[1]
		bare, q, _ := strings.Cut(u, "?")
		if q != "token=t0k%26n" {
			t.Errorf("%s: the link does not carry the token", u)
		}
		if w := get("/" + u); w.Code != 200 || w.Body.Len() == 0 {
			t.Errorf("GET /%s: status %d, %d bytes; want 200 and the file", u, w.Code, w.Body.Len())
		}
		if w := get("/" + bare); w.Code != 401 {
			t.Errorf("GET /%s without the token: status %d, want 401", bare, w.Code)
		}
	}
	open, err := New(Options{Addr: "127.0.0.1:8080"}, newFake(1e6, nil))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := assets.ReadFile("assets/index.html")
	if got := open.page(mustSub(assets, "assets")); string(got) != string(want) {
		t.Errorf("without a token the page differs from the embedded file")
	}
}

func mustSub(f fs.FS, dir string) fs.FS {
	s, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return s
}

// The page's edits reach every setting `set` takes, by the same key: each
// live setting's default, as its flag prints it, reads back as an edit;
// the fixed ones are refused.
func TestEditTakesEveryLiveSetting(t *testing.T) {
	for _, st := range instance.Table() {
		var s instance.Settings
		st.SetDefault(&s)
		text := st.Bind(&s).String()
		if text == "" {
			continue // no default to send (a file, a fault, a loss model)
		}
		got, err := Edit{st.Key: text}.Settings()
		switch {
		case st.Fixed && err == nil:
			t.Errorf("edit %s %s accepted: a running hop cannot change it", st.Key, text)
		case !st.Fixed && (err != nil || !got.Has(st.Key)):
			t.Errorf("edit %s %s: %v (given %v)", st.Key, text, err, got.Given())
		}
	}
}
