package instance

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/internal/connlimit"
	"github.com/prometheus/client_golang/prometheus"
)

// The metrics carry each server's counters, labelled by server.
func TestConnMetrics(t *testing.T) {
	var c Conns
	// One refused web connection: a cap of 0 closes every one.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := connlimit.Listen(ln, "web", 0, &c.Web, nil)
	defer l.Close()
	go l.Accept()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil || os.IsTimeout(err) {
		t.Fatalf("read on a connection over the cap: %v, want it closed within 5 s", err)
	}
	conn.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(newConnCollector(&c))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			got[mf.GetName()+"/"+m.GetLabel()[0].GetValue()] = v
		}
	}
	for key, want := range map[string]float64{
		"pi2hop_connections_refused_total/web":     1,
		"pi2hop_connections_refused_total/control": 0,
		"pi2hop_connections_accepted_total/web":    0,
		"pi2hop_connections_open/metrics":          0,
		"pi2hop_accept_errors_total/control":       0,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", key, v, ok, want)
		}
	}
	if len(got) != 12 {
		t.Errorf("%d series, want 12 (4 metrics x 3 servers): %v", len(got), got)
	}
}
