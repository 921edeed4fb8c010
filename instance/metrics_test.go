package instance

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/pcap/pcaptest"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/tun/tuntest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func TestMetricsExposeHopCounters(t *testing.T) {
	c, err := tuntest.NewChannelDevice("c", 1500, 16)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := tuntest.NewChannelDevice("s", 1500, 16)
	d := hop.DirConfig{Link: shaper.Config{Rate: shaper.Const{BitsPerSecond: 1e8}},
		Queue: aqm.Spec{Kind: aqm.KindDualPI2, DualPI2: aqm.DefaultConfig()}}
	up := d
	up.Link.Fault = shaper.Fault{Kind: shaper.FaultTOSZero}
	h, err := hop.New(hop.Config{Name: "m", Up: up, Down: d}, c, s)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	go h.Run(context.Background())
	pkt := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 17, SPort: 5000, DPort: 6000, DSCP: 10, Payload: 72}.Build() // Not-ECT
	c.Inject(pkt)
	if out := <-s.Outbound; aqm.Header(out).DSField() != 0 {
		t.Errorf("tos-zero before the queue: packet left with DS field %#x, want 0", aqm.Header(out).DSField())
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(h))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`pi2hop_packets_total{dir="up",point="out"} 1`,
		`pi2hop_bytes_total{dir="up",point="in"} 100`,
		`pi2hop_drops_total{dir="down",reason="overload"} 0`,
		`pi2hop_link_rate_bits_per_second{dir="up"} 1e+08`,
		`pi2hop_sojourn_seconds{dir="up",quantile="0.99",queue="C"}`,
		// The packet is its own flow: protocol 0, no ports, Not-ECT.
		`pi2hop_flows{class="Not-ECT",dir="up"} 1`,
		`pi2hop_flows{class="L4S",dir="up"} 0`,
		`pi2hop_flow_bytes{class="Not-ECT",dir="up"} 100`,
		`pi2hop_top_flow_drops{class="Not-ECT",dir="up",flow="udp 10.0.0.1:5000 > 10.0.1.1:6000",rank="1"} 0`,
		`pi2hop_top_flow_would_sanction{class="Not-ECT",dir="up",flow="udp 10.0.0.1:5000 > 10.0.1.1:6000",rank="1"} 0`,
		`pi2hop_ecn_faults_total{dir="up",kind="tos-zero"} 1`,
		`pi2hop_ecn_faults_total{dir="down",kind="tos-zero"} 0`,
		// One packet on an idle link never waits, and says nothing of
		// where the path's bottleneck is.
		`pi2hop_queue_busy_seconds_total{dir="up"} 0`,
		`pi2hop_not_bottleneck{dir="up"} 0`,
		`pi2hop_path_rate_bits_per_second{dir="down"} 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestMetricsListenAddr(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{":9100", "127.0.0.1:9100"}, {"0.0.0.0:9100", "0.0.0.0:9100"}, {"[::1]:80", "[::1]:80"}, {"9100", ""},
	} {
		got, err := MetricsListenAddr(tt.in)
		if got != tt.want || (err != nil) != (tt.want == "") {
			t.Errorf("MetricsListenAddr(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// A flow's passive RTT: a TCP segment up and the server's ACK echoing its
// TSval give one server-half sample, shown for the up and the down flow;
// no client half, so no sum.
func TestMetricsTopFlowRTT(t *testing.T) {
	c, err := tuntest.NewChannelDevice("c", 1500, 16)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := tuntest.NewChannelDevice("s", 1500, 16)
	d := hop.DirConfig{Link: shaper.Config{Rate: shaper.Const{BitsPerSecond: 1e8}},
		Queue: aqm.Spec{Kind: aqm.KindDualPI2, DualPI2: aqm.DefaultConfig()}}
	h, err := hop.New(hop.Config{Name: "m", Up: d, Down: d}, c, s)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	go h.Run(context.Background())
	c.Inject(pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 6, SPort: 5001, DPort: 6001, Seq: 1, Payload: 100,
		Flags: pcaptest.TCPAck, TS: true, TSval: 100, TSecr: 1}.Build())
	<-s.Outbound
	s.Inject(pcaptest.Packet{Src: pcaptest.Srv4, Dst: pcaptest.Cli4, Proto: 6, SPort: 6001, DPort: 5001, Seq: 1, Ack: 101,
		Flags: pcaptest.TCPAck, TS: true, TSval: 200, TSecr: 100}.Build())
	<-c.Outbound

	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(h))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`pi2hop_top_flow_rtt_seconds{class="Not-ECT",dir="up",flow="tcp 10.0.0.1:5001 > 10.0.1.1:6001",half="server",quantile="0.5",rank="1"}`,
		`pi2hop_top_flow_rtt_seconds{class="Not-ECT",dir="down",flow="tcp 10.0.1.1:6001 > 10.0.0.1:5001",half="server",quantile="0.99",rank="1"}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(string(body), `half="sum"`) || strings.Contains(string(body), `half="client"`) {
		t.Errorf("metrics show a half never timed:\n%s", body)
	}
}
