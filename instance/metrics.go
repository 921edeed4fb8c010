package instance

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/connlimit"
	"github.com/pi2hop/pi2hop/rtt"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewCollector is a Prometheus collector of h's statistics.
func NewCollector(h *hop.Hop) prometheus.Collector { return newCollector(h) }

// collector turns a stats snapshot, taken at scrape time, into metrics.
type collector struct {
	h *hop.Hop

	packets, bytes, drops, marks, malformed, ringDrops *prometheus.Desc
	prob, qdelay, backlog, sojourn, rate, busy         *prometheus.Desc
	queued, notBottleneck, pathRate                    *prometheus.Desc

	classFlows, classBytes, classMarks                     *prometheus.Desc
	topRate, topSojourn, topMarks, topDrops, topQP, topRTT *prometheus.Desc
	faults                                                 *prometheus.Desc
}

// MetricsTopFlows is how many flows per direction the metrics show one by
// one, highest rate first: the label set stays bounded (each series is
// one rank), whatever the traffic.
const MetricsTopFlows = 10

func newCollector(h *hop.Hop) *collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("pi2hop_"+name, help, append([]string{"dir"}, labels...), nil)
	}
	return &collector{
		h:         h,
		packets:   d("packets_total", "Packets read (point=in) and written (point=out).", "point"),
		bytes:     d("bytes_total", "IP bytes read (point=in) and written (point=out).", "point"),
		drops:     d("drops_total", "Packets dropped, by reason.", "reason"),
		marks:     d("ce_marks_total", "Packets written with CE set by the AQM."),
		malformed: d("malformed_total", "Packets without a well-formed IPv4/IPv6 header (forwarded as Classic Not-ECT)."),
		ringDrops: d("tun_ring_drops_total", "Packets the kernel dropped in the input TUN's ring before the hop read them."),
		prob:      d("dualpi2_prob", "DualPI2 base probability p' (0..1)."),
		qdelay:    d("queue_delay_seconds", "Head-of-queue sojourn now.", "queue"),
		backlog:   d("backlog_packets", "Packets queued, on the wire and in the delay line."),
		sojourn:   d("sojourn_seconds", "Sojourn quantiles since start.", "queue", "quantile"),
		rate:      d("link_rate_bits_per_second", "Configured link rate (0 for a trace)."),
		busy:      d("link_busy_seconds_total", "Time the link spent transmitting."),
		queued:    d("queue_busy_seconds_total", "Time a packet waited in the queue (the queue was not empty)."),
		notBottleneck: d("not_bottleneck", "1 when traffic flowed, the queue never built and the link stayed under 80 % busy for 10 s: "+
			"the path is limited elsewhere, at about pi2hop_path_rate_bits_per_second; else 0."),
		pathRate: d("path_rate_bits_per_second", "The rate traffic arrived at while pi2hop_not_bottleneck is 1, else 0."),

		classFlows: d("flows", "Flows in the flow table, by codepoint class.", "class"),
		classBytes: d("flow_bytes", "Bytes written of the flows in the flow table, by class (an evicted flow no longer counts).", "class"),
		classMarks: d("flow_ce_marks", "CE marks added to the flows in the flow table, by class.", "class"),
		topRate:    d("top_flow_rate_bits_per_second", "Delivered rate over the last second of the flow of this rank.", "rank", "flow", "class"),
		topSojourn: d("top_flow_sojourn_seconds", "Sojourn quantiles of the flow of this rank.", "rank", "flow", "class", "quantile"),
		topMarks:   d("top_flow_ce_marks", "CE marks added to the flow of this rank.", "rank", "flow", "class"),
		topDrops:   d("top_flow_drops", "Drops of the flow of this rank.", "rank", "flow", "class"),
		topQP:      d("top_flow_would_sanction", "1 when DOCSIS queue protection would sanction the flow of this rank (RFC 9957), else 0.", "rank", "flow", "class"),
		topRTT:     d("top_flow_rtt_seconds", "Passive round-trip time quantiles of the flow of this rank: the client half (hop to client and back), the server half (hop to server and back) and their sum; only the halves timed.", "rank", "flow", "class", "half", "quantile"),
		faults:     d("ecn_faults_total", "Packets an ECN path fault rewrote or dropped, by fault kind.", "kind"),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.packets, c.bytes, c.drops, c.marks, c.malformed, c.ringDrops,
		c.prob, c.qdelay, c.backlog, c.sojourn, c.rate, c.busy, c.queued, c.notBottleneck, c.pathRate,
		c.classFlows, c.classBytes, c.classMarks, c.topRate, c.topSojourn, c.topMarks, c.topDrops, c.topQP, c.topRTT, c.faults} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	snap, flows := c.h.StatsFlows(-1)
	for i, s := range []*hop.DirStats{&snap.Up, &snap.Down} {
		dir := s.Dir.String()
		counter := func(d *prometheus.Desc, v uint64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{dir}, labels...)...)
		}
		gauge := func(d *prometheus.Desc, v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{dir}, labels...)...)
		}
		counter(c.packets, s.In, "in")
		counter(c.packets, s.Out, "out")
		counter(c.bytes, s.InBytes, "in")
		counter(c.bytes, s.OutBytes, "out")
		for r, n := range s.QueueDrops {
			if name := aqm.Reason(r).String(); name != "" {
				counter(c.drops, n, name)
			}
		}
		counter(c.drops, s.NoBuffer, "nobuffer")
		counter(c.drops, s.WriteErrors, "write")
		counter(c.marks, s.Marked)
		counter(c.malformed, s.Malformed)
		counter(c.ringDrops, s.RingDrops)
		for k := shaper.FaultNone + 1; int(k) < shaper.NumFaultKinds; k++ {
			counter(c.faults, s.Link.Faults[k], k.String())
		}
		gauge(c.prob, aqm.ProbFloat(s.Queue.Prob))
		gauge(c.qdelay, float64(s.Queue.DelayC)/1e9, "C")
		gauge(c.qdelay, float64(s.Queue.DelayL)/1e9, "L")
		gauge(c.backlog, float64(s.Pending))
		for _, q := range []struct {
			name string
			h    *hop.Histogram
		}{{"C", &s.SojournC}, {"L", &s.SojournL}} {
			for _, p := range []float64{0.5, 0.99} {
				gauge(c.sojourn, float64(q.h.Quantile(p))/1e9, q.name, fmt.Sprint(p))
			}
		}
		gauge(c.rate, float64(s.Bps))
		ch <- prometheus.MustNewConstMetric(c.busy, prometheus.CounterValue, float64(s.Link.Busy)/1e9, dir)
		ch <- prometheus.MustNewConstMetric(c.queued, prometheus.CounterValue, float64(s.Link.Queued)/1e9, dir)
		nb, path := 0.0, 0.0
		if s.NotBottleneck {
			nb, path = 1, s.PathBps
		}
		gauge(c.notBottleneck, nb)
		gauge(c.pathRate, path)
		c.collectFlows(&flows[i], gauge)
	}
}

// flowClasses are the class label's values, each always present.
var flowClasses = []string{hop.ClassL4S, hop.ClassClassicECN, hop.ClassNotECT, hop.ClassChanged, hop.ClassUnknown}

// collectFlows adds a direction's totals by class and its top flows.
func (c *collector) collectFlows(ft *hop.FlowTable, gauge func(*prometheus.Desc, float64, ...string)) {
	type sums struct{ flows, bytes, marks uint64 }
	by := map[string]*sums{}
	for _, cl := range flowClasses {
		by[cl] = &sums{}
	}
	for _, f := range ft.Flows {
		s := by[f.Class]
		if s == nil {
			continue
		}
		s.flows++
		s.bytes += f.Out.Total().Bytes
		s.marks += f.Marks
	}
	for _, cl := range flowClasses {
		gauge(c.classFlows, float64(by[cl].flows), cl)
		gauge(c.classBytes, float64(by[cl].bytes), cl)
		gauge(c.classMarks, float64(by[cl].marks), cl)
	}
	for k, f := range ft.Flows[:min(len(ft.Flows), MetricsTopFlows)] {
		rank, name := fmt.Sprint(k+1), f.Proto+" "+f.Src+" > "+f.Dst
		gauge(c.topRate, float64(f.RateBps), rank, name, f.Class)
		gauge(c.topSojourn, f.SojournP50Ms/1e3, rank, name, f.Class, "0.5")
		gauge(c.topSojourn, f.SojournP99Ms/1e3, rank, name, f.Class, "0.99")
		gauge(c.topMarks, float64(f.Marks), rank, name, f.Class)
		var drops uint64
		for _, n := range f.Drops {
			drops += n
		}
		gauge(c.topDrops, float64(drops), rank, name, f.Class)
		sanction := 0.0
		if f.QProt != nil && f.QProt.Sanction {
			sanction = 1
		}
		gauge(c.topQP, sanction, rank, name, f.Class)
		if r := f.RTT; r != nil {
			for _, h := range []struct {
				name string
				s    rtt.Figures
			}{{"client", r.ClientHalf}, {"server", r.ServerHalf}, {"sum", r.Sum}} {
				if h.s.N > 0 {
					gauge(c.topRTT, h.s.P50Ms/1e3, rank, name, f.Class, h.name, "0.5")
					gauge(c.topRTT, h.s.P99Ms/1e3, rank, name, f.Class, h.name, "0.99")
				}
			}
		}
	}
}

// metricsServer serves /metrics until closed.
type metricsServer struct{ srv *http.Server }

// MetricsListenAddr binds a bare ":port" to loopback: exposing the
// statistics beyond this box must be asked for with an explicit host.
func MetricsListenAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("metrics address %q: want host:port or :port (%v)", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// MaxMetricsConns caps the metrics endpoint's open connections: a few
// scrapers keep one each.
const MaxMetricsConns = 64

// serveMetrics serves h's metrics and conns' on http://addr/metrics until
// closed, counting its own connections in conns.Metrics.
func serveMetrics(addr string, h *hop.Hop, conns *Conns, lg *connlimit.Limited) (io.Closer, error) {
	addr, err := MetricsListenAddr(addr)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(h), newConnCollector(conns))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	m := &metricsServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute,
		ErrorLog: connlimit.ErrorLog(lg, "metrics")}}
	go m.srv.Serve(connlimit.Listen(ln, "metrics", MaxMetricsConns, &conns.Metrics, lg))
	return m, nil
}

func (m *metricsServer) Close() error {
	if err := m.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
