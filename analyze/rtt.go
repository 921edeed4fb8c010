package analyze

import (
	"fmt"
	"net/netip"

	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/rtt"
)

// Passive round-trip times from the capture, by the hop's own algorithm
// (package rtt) with the hop's table sizes: each packet of a pi2hop "up"
// or "down" tap at its in point (where the hop reads it) is fed with its
// capture time and direction, as the hop sees it.

// RTTResult is the flows' round-trip times through the hop.
type RTTResult struct {
	Stats rtt.Stats `json:"stats"`
	// Flows are the flows timed or waiting to be, most recently seen
	// first (those the table evicted are not listed).
	Flows []RTTFlow `json:"flows"`
}

// RTTFlow is one flow's round-trip times, client and server halves and
// their sum (rtt.Halves), in ms.
type RTTFlow struct {
	Flow   string      `json:"flow"`   // "tcp 10.0.0.1:5000 > 10.0.1.1:80", client first
	Class  string      `json:"class"`  // the queue its packets went to: C, L or C+L
	Method rtt.Method  `json:"method"` // how it is timed
	Status rtt.Status  `json:"status"`
	Client rtt.Figures `json:"client_half"` // hop → client → hop
	Server rtt.Figures `json:"server_half"` // hop → server → hop
	Sum    rtt.Figures `json:"sum"`
	// Dropped counts packets that waited for an answer and were dropped
	// for newer ones; Karn answers not timed because they covered
	// retransmitted data.
	Dropped uint64 `json:"dropped"`
	Karn    uint64 `json:"karn"`

	hists [2]rtt.Hist
}

// rttKey is a flow as rtt orients it, client first.
type rttKey struct {
	proto          uint8
	client, server netip.Addr
	cport, sport   uint16
}

// maxRTTClasses bounds the flows whose queue class is remembered.
const maxRTTClasses = 4 * maxFlows

// rttDir is the rtt direction of a pi2hop tap direction.
func rttDir(name string) (rtt.Dir, bool) {
	switch name {
	case "up":
		return rtt.Up, true
	case "down":
		return rtt.Down, true
	}
	return 0, false
}

// addRTT feeds a packet seen at the hop's client-facing edge: an up
// packet at its in point, a down one at its out point (as the hop's own
// table watches them, so both time a flow alike).
func (a *Analyzer) addRTT(dir string, p *pcap.Packet, h *ipHeader) {
	d, ok := rttDir(dir)
	if !ok {
		return
	}
	if a.rtt == nil {
		t, err := rtt.NewTable(rtt.DefaultConfig)
		if err != nil {
			panic(err) // DefaultConfig is valid
		}
		a.rtt, a.rttClass = t, map[rttKey]uint8{}
	}
	length := h.totalLen
	if length == 0 || length > p.Length {
		length = p.Length
	}
	a.rtt.Captured(p.Data, length, d, p.Time)
	k := rttKey{proto: h.flow.Proto, client: h.flow.Src, server: h.flow.Dst, cport: h.flow.SrcPort, sport: h.flow.DstPort}
	if d == rtt.Down {
		k.client, k.server, k.cport, k.sport = k.server, k.client, k.sport, k.cport
	}
	if c, ok := a.rttClass[k]; ok || len(a.rttClass) < maxRTTClasses {
		a.rttClass[k] = c | 1<<classFor(p, h.ecn)
	}
}

// rttResult is the RTT part of the result; nil without up/down taps.
func (a *Analyzer) rttResult() *RTTResult {
	if a.rtt == nil {
		return nil
	}
	s := rtt.NewSnapshot(a.rtt)
	a.rtt.CopyTo(s, 0)
	r := &RTTResult{Stats: s.Stats, Flows: []RTTFlow{}}
	for _, f := range s.Flows() {
		k := rttKey{proto: f.Proto, client: f.Client.Addr(), server: f.Server.Addr(), cport: f.Client.Port(), sport: f.Server.Port()}
		if f.Proto == 1 || f.Proto == 58 { // ICMP's identifier is no port to analyze
			k.cport, k.sport = 0, 0
		}
		r.Flows = append(r.Flows, RTTFlow{
			Flow:    rttFlowString(f),
			Class:   classNames(a.rttClass[k]),
			Method:  f.Method,
			Status:  f.Status,
			Client:  f.ClientHalf,
			Server:  f.ServerHalf,
			Sum:     f.Sum,
			Dropped: f.Dropped,
			Karn:    f.Karn,
			hists:   *f.Hists,
		})
	}
	return r
}

// classNames names a set of classes (bit 0 C, bit 1 L) as FlowResult does.
func classNames(bits uint8) string {
	switch bits {
	case 1:
		return "C"
	case 2:
		return "L"
	case 3:
		return "C+L"
	}
	return "-"
}

func rttFlowString(f rtt.Flow) string {
	proto := fmt.Sprint(f.Proto)
	switch f.Proto {
	case 6:
		proto = "tcp"
	case 17:
		proto = "udp"
	case 1, 58:
		return fmt.Sprintf("icmp %s > %s id %d", f.Client.Addr(), f.Server.Addr(), f.Client.Port())
	}
	return fmt.Sprintf("%s %s > %s", proto, f.Client, f.Server)
}

// rttCurve is the round trip's distribution over a set of flows, as the
// CCDF plot draws it: at each share q of samples, the client halves'
// q-quantile plus the server halves' (as rtt.Halves sums them, on the halves' samples
// of all the flows merged); a set whose flows time one half only (an
// ICMP echo in one direction) draws that half. ms ascending.
func rttCurve(flows []*RTTFlow) figure.Dist {
	var halves [2]rtt.Hist
	for _, f := range flows {
		for h := range halves {
			for i, c := range f.hists[h].Counts {
				halves[h].Counts[i] += c
			}
			halves[h].N += f.hists[h].N
			halves[h].Max = max(halves[h].Max, f.hists[h].Max)
		}
	}
	n := int(max(halves[0].N, halves[1].N))
	if halves[0].N > 0 && halves[1].N > 0 {
		n = int(min(halves[0].N, halves[1].N))
	}
	return figure.Curve(n, func(q float64) float64 { return ms(halves[0].Quantile(q) + halves[1].Quantile(q)) })
}

// writeRTT prints the flows' round trips, at most tableFlows of them.
func writeRTT(p func(string, ...any), r *RTTResult) {
	if r == nil {
		return
	}
	st := r.Stats
	p("\n== round trips at the hop (client half + server half = sum) ==\n")
	p("  %d packets, %d samples, %d flows evicted, %d waiting packets dropped, %d malformed, %d untimed\n",
		st.Packets, st.Samples, st.Evicted, st.Dropped, st.Malformed, st.Untimed)
	p("  FLOW\tCLASS\tMETHOD\tCLIENT P50/P99 ms\tSERVER P50/P99 ms\tSUM P50/P99 ms\tSAMPLES C/S\tSTATUS\n")
	for i, f := range r.Flows {
		if i == tableFlows {
			p("  ... %d more flows (--json lists all)\n", len(r.Flows)-tableFlows)
			break
		}
		p("  %s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n", f.Flow, f.Class, f.Method, rttPair(f.Client), rttPair(f.Server), rttPair(f.Sum),
			f.Client.N, f.Server.N, f.Status)
	}
}

func rttPair(s rtt.Figures) string {
	if s.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f/%.2f", s.P50Ms, s.P99Ms)
}
