package instance

import (
	"log/slog"

	"github.com/pi2hop/pi2hop/internal/connlimit"
	"github.com/prometheus/client_golang/prometheus"
)

// Conns are the connection counters of an instance's servers: the
// control socket, the web view and the metrics endpoint.
type Conns struct {
	Control, Web, Metrics connlimit.Counters
}

// ConnStats are Conns' values, as stats --json prints them (docs/json.md).
type ConnStats struct {
	Control connlimit.Stats `json:"control"`
	Web     connlimit.Stats `json:"web"`
	Metrics connlimit.Stats `json:"metrics"`
}

// Stats returns the counters now.
func (c *Conns) Stats() ConnStats {
	return ConnStats{Control: c.Control.Stats(), Web: c.Web.Stats(), Metrics: c.Metrics.Stats()}
}

// MaxWebConns caps the web view's open connections. A page holds one
// stream and fetches a few files; one beyond the cap is closed as soon as
// accepted (counted in stats as refused), so a crowd of idle connections,
// which need no token to open, costs a fixed number of fds and bytes.
const MaxWebConns = 256

// serverLog is the rate-limited log of one of an instance's servers.
func serverLog(log *slog.Logger) *connlimit.Limited {
	return connlimit.NewLimited(log, connlimit.LogEvery)
}

// connCollector exports Conns as metrics, labelled by server.
type connCollector struct {
	c                                  *Conns
	open, accepted, refused, acceptErr *prometheus.Desc
}

func newConnCollector(c *Conns) *connCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("pi2hop_"+name, help, []string{"server"}, nil)
	}
	return &connCollector{c: c,
		open:      d("connections_open", "Connections open now (server: control, web, metrics)."),
		accepted:  d("connections_accepted_total", "Connections accepted."),
		refused:   d("connections_refused_total", "Connections closed as soon as accepted: the server's cap of open connections was reached."),
		acceptErr: d("accept_errors_total", "Failed accepts the server retried (out of file descriptors, connection aborted)."),
	}
}

func (c *connCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.open, c.accepted, c.refused, c.acceptErr} {
		ch <- d
	}
}

func (c *connCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.c.Stats()
	for _, s := range []struct {
		name string
		v    connlimit.Stats
	}{{"control", st.Control}, {"web", st.Web}, {"metrics", st.Metrics}} {
		ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(s.v.Open), s.name)
		ch <- prometheus.MustNewConstMetric(c.accepted, prometheus.CounterValue, float64(s.v.Accepted), s.name)
		ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(s.v.Refused), s.name)
		ch <- prometheus.MustNewConstMetric(c.acceptErr, prometheus.CounterValue, float64(s.v.AcceptErrors), s.name)
	}
}
