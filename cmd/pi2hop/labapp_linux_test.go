package main

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/internal/roottest"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/testbed/report"
)

// appRuns returns the report's runs by name, failing the test when one
// of names is missing or has no app figures.
func appRuns(t *testing.T, rep *report.Report, names ...string) map[string]*report.App {
	t.Helper()
	got := map[string]*report.App{}
	for i := range rep.Runs {
		if a := rep.Runs[i].App; a != nil {
			got[rep.Runs[i].Name] = a
		}
	}
	for _, n := range names {
		if got[n] == nil {
			t.Fatalf("no app figures for variant %s in %+v", n, rep.Runs)
		}
	}
	if len(rep.Runs) != len(names) {
		t.Errorf("%d runs, want %d (%v)", len(rep.Runs), len(names), names)
	}
	return got
}

func finding(rep *report.Report, prefix string) report.Finding {
	for _, f := range rep.Findings {
		if strings.HasPrefix(f.Question, prefix) {
			return f
		}
	}
	return report.Finding{Answer: "(none)"}
}

// TestLabAppPing is the WWDC A/B for ping in ECT(1): on the l4s path it
// keeps the L queue's delay, on the classic path its packets arrive
// Not-ECT and wait in the C queue behind the downloads; ping validates
// nothing, so it does not fall back. The server, a script, prints a
// metric the report must summarise in each variant.
func TestLabAppPing(t *testing.T) {
	needLabRoot(t)
	roottest.Need(t, "ping", "sh")
	server := `for i in 1 2 3 4 5; do echo "{\"metric\": \"frame_ms\", \"value\": $i, \"unit\": \"ms\"}"; done; exec sleep 600`
	rep := runLabCLI(t, context.Background(), "app", "--client", "ping -Q 1 -i 0.02 -c 300 $PI2HOP_SERVER", "--server", server,
		"--variants", "l4s,classic", "--duration", "15s", "--plot-format", "png")
	apps := appRuns(t, rep, "l4s", "classic")
	for name, a := range apps {
		if a.Client.Failed || a.Client.Stopped || a.Client.Code != 0 {
			t.Errorf("%s: ping did not run to its end: %+v", name, a.Client)
		}
		if a.Server == nil || !a.Server.Stopped || a.Server.Failed {
			t.Errorf("%s: the server script was not stopped by the lab: %+v", name, a.Server)
		}
		// 1+2+3+4+5: five values, mean 3, nearest-rank median 3, p99 5.
		if len(a.Metrics) != 1 || a.Metrics[0].Name != "frame_ms" || a.Metrics[0].From != "server" || a.Metrics[0].Unit != "ms" ||
			a.Metrics[0].Summary.N != 5 || a.Metrics[0].Summary.Mean != 3 || a.Metrics[0].Summary.P50 != 3 || a.Metrics[0].Summary.P99 != 5 {
			t.Errorf("%s: metrics %+v, want frame_ms from the server: 5 values, mean 3", name, a.Metrics)
		}
		// 300 requests and 300 replies (and a few packets of the
		// namespaces' own: neighbour discovery); a lost one is the
		// queue's doing.
		if n := a.Sent.Total(); n < 550 || n > 650 {
			t.Errorf("%s: the hop saw %d of ping's packets, want about 600", name, n)
		}
		// ping -Q 1 sends every request ECT(1), whatever the path does.
		if c := a.ClientSent; c.ECT1 < c.Total()*95/100 {
			t.Errorf("%s: the client sent %+v, want ECT(1)", name, c)
		}
	}
	l4s, classic := apps["l4s"], apps["classic"]
	if f := finding(rep, "the app sent ECT(1)"); f.Answer != "yes" {
		t.Errorf("l4s: ping -Q 1 sent %+v; finding %+v", l4s.ClientSent, f)
	}
	if classic.Received.NotECT != classic.Received.Total() {
		t.Errorf("classic: received %+v; want all of it arriving Not-ECT", classic.Received)
	}
	if f := finding(rep, "the app fell back"); f.Answer != "no" {
		t.Errorf("ping validates nothing, so it cannot fall back: %+v", f)
	}
	if l4s.RTTMs == nil || classic.RTTMs == nil {
		t.Fatalf("no passive RTT: l4s %v, classic %v", l4s.RTTMs, classic.RTTMs)
	}
	// Both see the 20 ms base; the classic one adds the C queue the
	// downloads keep near DualPI2's 15 ms target, the L queue next to
	// nothing.
	if l4s.RTTMs.P50 < 19 || l4s.RTTMs.P99 >= classic.RTTMs.P99 {
		t.Errorf("RTT p50/p99: l4s %.1f/%.1f ms, classic %.1f/%.1f ms; want l4s ≥ 19 ms at the median and its p99 below classic's",
			l4s.RTTMs.P50, l4s.RTTMs.P99, classic.RTTMs.P50, classic.RTTMs.P99)
	}
	if f := finding(rep, "the app's RTT p99 is lower"); f.Answer != "yes" {
		t.Errorf("finding %+v", f)
	}
}

// TestLabAppIperf3 runs iperf3 (a classic TCP app) through the three
// built-in variants: each has its RTT and goodput, and the FIFO, which
// the downloads keep full, adds its 100 ms to the app's round trip.
func TestLabAppIperf3(t *testing.T) {
	needLabRoot(t)
	roottest.Need(t, "iperf3")
	rep := runLabCLI(t, context.Background(), "app", "--client", "iperf3 -c $PI2HOP_SERVER -t 5", "--server", "iperf3 -s -1",
		"--duration", "10s", "--plot-format", "png")
	apps := appRuns(t, rep, "l4s", "classic", "fifo")
	for name, a := range apps {
		if a.Client.Failed || a.Client.Code != 0 || a.Server == nil || a.Server.Failed {
			t.Errorf("%s: client %+v, server %+v", name, a.Client, a.Server)
		}
		if a.RTTMs == nil || a.RTTMs.N == 0 {
			t.Errorf("%s: no RTT", name)
		}
		// iperf3 -c sends: most of 10 Mbit/s goes up, the downloads take
		// the other direction.
		if a.UpBps < 5e6 {
			t.Errorf("%s: iperf3's goodput up %.2f Mbit/s, want most of 10", name, a.UpBps/1e6)
		}
	}
	if l, f := apps["l4s"].RTTMs, apps["fifo"].RTTMs; l != nil && f != nil && f.P99 <= l.P99+50 {
		t.Errorf("RTT p99: fifo %.1f ms, l4s %.1f ms; want the FIFO's over 50 ms above", f.P99, l.P99)
	}
}

// TestLabAppNAT: with --nat the client reaches beyond the host through
// the hop, masqueraded: a ping to a namespace outside (a veth of the
// host's) is timed whole, and forwarding and the NAT table are gone
// after the lab, as they were.
func TestLabAppNAT(t *testing.T) {
	needLabRoot(t)
	roottest.Need(t, "ping")
	outside := labInstance(7) + "o"
	j := netsys.NewJournal(nil)
	t.Cleanup(func() {
		if err := j.Undo(); err != nil {
			t.Error(err)
		}
	})
	for _, err := range []error{
		j.NewNamespace(outside),
		j.AddVeth("", outside+"h", outside, "x0"),
		j.AddAddr("", outside+"h", netip.MustParsePrefix("10.254.249.1/24")),
		j.AddAddr(outside, "x0", netip.MustParsePrefix("10.254.249.2/24")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	fwd, _ := netsys.ReadSysctl("", "net/ipv4/ip_forward")
	rep := runLabCLI(t, context.Background(), "app", "--nat", "--client", "ping -c 30 -i 0.05 10.254.249.2",
		"--variants", "l4s", "--cross", "1", "--duration", "8s", "--plot-format", "png")
	a := appRuns(t, rep, "l4s")["l4s"]
	if a.Client.Failed || a.Client.Code != 0 {
		t.Errorf("ping through NAT: %+v", a.Client)
	}
	// ping is Not-ECT: the 20 ms base plus the C queue the download
	// keeps near DualPI2's 15 ms target; the outside namespace is one
	// veth hop beyond the host.
	if a.RTTMs == nil || a.RTTMs.N < 25 || a.RTTMs.P50 < 19 || a.RTTMs.P50 > 60 {
		t.Errorf("RTT %+v, want about 30 samples between the 20 ms base and base + 2·target", a.RTTMs)
	}
	if now, _ := netsys.ReadSysctl("", "net/ipv4/ip_forward"); now != fwd {
		t.Errorf("ip_forward %s after the lab, was %s", now, fwd)
	}
}
