package web

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/lan"
)

// Sample is one update of the view: both directions over the interval
// since the previous snapshot.
type Sample struct {
	T       int64       `json:"t"` // unix ms when the snapshot was taken
	Name    string      `json:"name"`
	Running bool        `json:"running"`
	Dirs    []DirSample `json:"dirs"`
}

// DirSample is one direction over one interval. Rates are per second of
// the hop's own clock (the snapshot's Elapsed); sojourns are nearest-rank
// quantiles of the packets forwarded in the interval, null when none was.
type DirSample struct {
	Dir        string             `json:"dir"`
	Kind       string             `json:"kind"`
	Rate       string             `json:"rate"`      // as configured
	Bps        uint64             `json:"rate_bps"`  // 0 for unlimited or a trace
	Delay      float64            `json:"delay_ms"`  // one-way
	Throughput float64            `json:"tput_bps"`  // IP bytes written, bit/s
	Util       float64            `json:"util"`      // fraction of time the link sent
	LP50       *float64           `json:"l_p50_ms"`  // L queue sojourn
	LP99       *float64           `json:"l_p99_ms"`  //
	CP50       *float64           `json:"c_p50_ms"`  // C queue sojourn
	CP99       *float64           `json:"c_p99_ms"`  //
	Prob       float64            `json:"prob"`      // DualPI2's base probability p'
	Marks      float64            `json:"marks_ps"`  // CE marks per second
	Drops      map[string]float64 `json:"drops_ps"`  // drops per second by reason (only those seen)
	Pending    int                `json:"pending"`   // packets in the hop now
	OutBytes   uint64             `json:"out_bytes"` // since start
}

// Flow is one row of the flow table. The page fills the table from
// these; a snapshot that carries the owners' flow table is turned into
// them by snapshotFlows.
type Flow struct {
	Dir   string  `json:"dir"`
	Proto string  `json:"proto"`
	Src   string  `json:"src"` // address:port
	Dst   string  `json:"dst"`
	Class string  `json:"class"` // L4S, Classic ECN, Not-ECT, changed
	Queue string  `json:"queue"` // L or C
	Rate  float64 `json:"rate_bps"`
	Bytes uint64  `json:"bytes"`
	Marks uint64  `json:"marks"`
	Drops uint64  `json:"drops"`
	P99   float64 `json:"p99_ms"`
	// RTT is the passive round trip as stats --flows shows it
	// (hop.FlowRTT.Text); RTTP50 its median, to sort by, absent without one.
	RTT     string   `json:"rtt"`
	RTTP50  *float64 `json:"rtt_p50_ms,omitempty"`
	Verdict string   `json:"verdict"`
	Device  string   `json:"device,omitempty"` // share: the LAN device (hostname or MAC)
}

// snapshotFlows is the rows of a source that lists no flows itself.
func snapshotFlows(*hop.Snapshot) []Flow { return nil }

// flowRows turns the hop's flow tables into rows.
func flowRows(tables [2]hop.FlowTable) []Flow {
	out := []Flow{}
	for _, t := range tables {
		for _, f := range t.Flows {
			var drops uint64
			for _, n := range f.Drops {
				drops += n
			}
			row := Flow{Dir: t.Dir, Proto: f.Proto, Src: f.Src, Dst: f.Dst, Class: f.Class, Queue: f.Queue,
				Rate: float64(f.RateBps), Bytes: f.In.Total().Bytes, Marks: f.Marks, Drops: drops,
				P99: f.SojournP99Ms, RTT: f.RTT.Text(), Verdict: f.Verdict}
			if p50, ok := f.RTT.P50Ms(); ok {
				row.RTTP50 = &p50
			}
			out = append(out, row)
		}
	}
	return out
}

// Device is one row of share's device table.
type Device struct {
	MAC      string `json:"mac"`
	Addr     string `json:"addr"`
	Hostname string `json:"hostname,omitempty"`
	Up       uint64 `json:"up_bytes"`
	Down     uint64 `json:"down_bytes"`
}

// tableEvent is the slower stream: flows and devices.
type tableEvent struct {
	T       int64    `json:"t"`
	Flows   []Flow   `json:"flows"`
	Devices []Device `json:"devices"`
}

// dirSample computes d's interval since prev (nil: since start).
func dirSample(cur, prev *hop.DirStats) DirSample {
	var zero hop.DirStats
	if prev == nil || prev.Elapsed >= cur.Elapsed {
		prev = &zero
	}
	dt := float64(cur.Elapsed-prev.Elapsed) / 1e9
	per := func(n, m uint64) float64 {
		if dt <= 0 || n < m {
			return 0
		}
		return float64(n-m) / dt
	}
	ds := DirSample{
		Dir: cur.Dir.String(), Kind: cur.Kind, Rate: cur.Rate, Bps: cur.Bps,
		Delay:      float64(cur.Delay) / 1e6,
		Throughput: 8 * per(cur.OutBytes, prev.OutBytes),
		Prob:       aqm.ProbFloat(cur.Queue.Prob),
		Marks:      per(cur.Marked, prev.Marked),
		Drops:      map[string]float64{},
		Pending:    cur.Pending,
		OutBytes:   cur.OutBytes,
	}
	if dt > 0 && cur.Link.Busy >= prev.Link.Busy {
		ds.Util = float64(cur.Link.Busy-prev.Link.Busy) / float64(cur.Elapsed-prev.Elapsed)
	}
	l, c := cur.SojournL.Sub(&prev.SojournL), cur.SojournC.Sub(&prev.SojournC)
	ds.LP50, ds.LP99 = quantileMs(&l, 0.5), quantileMs(&l, 0.99)
	ds.CP50, ds.CP99 = quantileMs(&c, 0.5), quantileMs(&c, 0.99)
	for r := range cur.QueueDrops {
		if v := per(cur.QueueDrops[r], prev.QueueDrops[r]); v > 0 {
			ds.Drops[aqm.Reason(r).String()] = v
		}
	}
	if v := per(cur.NoBuffer, prev.NoBuffer); v > 0 {
		ds.Drops["nobuffer"] = v
	}
	if v := per(cur.WriteErrors, prev.WriteErrors); v > 0 {
		ds.Drops["write"] = v
	}
	return ds
}

func quantileMs(h *hop.Histogram, q float64) *float64 {
	if h.Total == 0 {
		return nil
	}
	v := float64(h.Quantile(q)) / 1e6
	return &v
}

// sample takes a snapshot every s.every until Close, and hands each
// sample to the ring and the streams; the flow and device tables go out
// once a second (a browser need not re-sort 4096 rows five times a
// second).
func (s *Server) sample() {
	defer close(s.done)
	t := time.NewTicker(s.every)
	defer t.Stop()
	var prev *hop.Snapshot
	var lastTable time.Time
	for {
		select {
		case <-s.stop:
			s.mu.Lock()
			for ch := range s.subs {
				close(ch)
				delete(s.subs, ch)
			}
			s.mu.Unlock()
			return
		case now := <-t.C:
			snap, ok := s.src.Stats()
			if !ok {
				prev = nil
				continue
			}
			if prev != nil && (prev.Name != snap.Name || snap.Up.Elapsed < prev.Up.Elapsed) {
				prev = nil // another hop (the lab's next run)
			}
			smp := s.makeSample(&snap, prev)
			prev = &snap
			s.ring.add(smp)
			b, _ := json.Marshal(smp)
			s.broadcast(event("sample", b))
			if now.Sub(lastTable) >= time.Second-s.every/2 {
				lastTable = now
				tb, _ := json.Marshal(s.table(&snap))
				ev := event("table", tb)
				s.mu.Lock()
				s.last = ev
				s.mu.Unlock()
				s.broadcast(ev)
			}
		}
	}
}

func (s *Server) makeSample(snap, prev *hop.Snapshot) Sample {
	taken := snap.Up.Taken
	if taken.IsZero() {
		taken = time.Now()
	}
	smp := Sample{T: taken.UnixMilli(), Name: snap.Name, Running: snap.Running}
	for _, d := range []hop.Dir{hop.Up, hop.Down} {
		var p *hop.DirStats
		if prev != nil {
			p = prev.Dir(d)
		}
		smp.Dirs = append(smp.Dirs, dirSample(snap.Dir(d), p))
	}
	return smp
}

func (s *Server) table(snap *hop.Snapshot) tableEvent {
	ev := tableEvent{T: time.Now().UnixMilli(), Flows: []Flow{}, Devices: []Device{}}
	if fsrc, ok := s.src.(FlowSource); ok {
		ev.Flows = fsrc.Flows(snap)
	} else if f := snapshotFlows(snap); f != nil {
		ev.Flows = f
	}
	cl, _ := s.src.Clients()
	ev.Devices = devices(cl)
	return ev
}

func devices(cl []lan.Client) []Device {
	out := []Device{}
	for _, c := range cl {
		out = append(out, Device{MAC: c.MAC, Addr: c.Addr.String(), Hostname: c.Hostname, Up: c.Up, Down: c.Down})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Up+out[i].Down > out[j].Up+out[j].Down })
	return out
}

// event frames one server-sent event.
func event(name string, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString("event: " + name + "\ndata: ")
	b.Write(data) // JSON has no raw newlines
	b.WriteString("\n\n")
	return b.Bytes()
}

// broadcast hands ev to every stream that has room; a full one misses it.
func (s *Server) broadcast(ev []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.subs {
		select {
		case ch <- ev:
		default:
		}
	}
}

// events is GET /events: the history first, then live samples and tables.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ch := make(chan []byte, 16)
	s.mu.Lock()
	select {
	case <-s.stop:
		s.mu.Unlock()
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	default:
	}
	s.subs[ch] = struct{}{}
	last := s.last
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if _, ok := s.subs[ch]; ok {
			delete(s.subs, ch)
		}
		s.mu.Unlock()
	}()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	hist, _ := json.Marshal(s.ring.since(time.Now().Add(-2 * time.Minute).UnixMilli()))
	w.Write(event("history", hist))
	if last != nil {
		w.Write(last)
	}
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-ch:
			if !ok {
				return
			}
			if _, err := w.Write(ev); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

func (s *Server) downloadJSON(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="pi2hop-web.json"`)
	json.NewEncoder(w).Encode(struct {
		Samples []Sample `json:"samples"`
	}{s.ring.since(0)})
}

// CSVHeader are the columns of the CSV download: one row per sample and
// direction.
var CSVHeader = []string{"t_unix_ms", "dir", "rate_bps", "tput_bps", "util", "l_p50_ms", "l_p99_ms",
	"c_p50_ms", "c_p99_ms", "prob", "marks_ps", "drops_ps", "pending"}

func (s *Server) downloadCSV(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/csv")
	w.Header().Set("Content-Disposition", `attachment; filename="pi2hop-web.csv"`)
	cw := csv.NewWriter(w)
	cw.Write(CSVHeader)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	opt := func(v *float64) string {
		if v == nil {
			return ""
		}
		return f(*v)
	}
	for _, smp := range s.ring.since(0) {
		for _, d := range smp.Dirs {
			var drops float64
			for _, v := range d.Drops {
				drops += v
			}
			cw.Write([]string{strconv.FormatInt(smp.T, 10), d.Dir, strconv.FormatUint(d.Bps, 10), f(d.Throughput),
				f(d.Util), opt(d.LP50), opt(d.LP99), opt(d.CP50), opt(d.CP99), f(d.Prob), f(d.Marks), f(drops),
				strconv.Itoa(d.Pending)})
		}
	}
	cw.Flush()
}

// ring holds the last n samples.
type ring struct {
	mu   sync.Mutex
	buf  []Sample
	next int
	full bool
}

func newRing(n int) *ring {
	if n < 1 {
		n = 1
	}
	return &ring{buf: make([]Sample, n)}
}

func (r *ring) add(s Sample) {
	r.mu.Lock()
	r.buf[r.next] = s
	r.next = (r.next + 1) % len(r.buf)
	if r.next == 0 {
		r.full = true
	}
	r.mu.Unlock()
}

// since returns the samples at or after t (unix ms), oldest first.
func (r *ring) since(t int64) []Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []Sample{}
	start, n := 0, r.next
	if r.full {
		start, n = r.next, len(r.buf)
	}
	for i := 0; i < n; i++ {
		if s := r.buf[(start+i)%len(r.buf)]; s.T >= t {
			out = append(out, s)
		}
	}
	return out
}
