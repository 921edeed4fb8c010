package analyze

import (
	"slices"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/pcap"
)

// Result is what Analyze found. It marshals to JSON as `pi2hop analyze
// --json` prints it. Times are in milliseconds unless a name says ns.
type Result struct {
	Files      []FileResult       `json:"files"`
	Interfaces []InterfaceResult  `json:"interfaces"`
	BinMs      float64            `json:"bin_ms"`
	CouplingK  float64            `json:"coupling_k"`
	Start      int64              `json:"start_unix_ns"` // time of the first packet; bins count from here
	Directions []*DirectionResult `json:"directions"`
	// RTT is every flow's round-trip time through the hop, from the
	// packets of pi2hop's up and down taps; absent without them.
	RTT *RTTResult `json:"rtt,omitempty"`
}

// FileResult describes one input file.
type FileResult struct {
	Path        string `json:"path"`
	Format      string `json:"format"`  // pcap or pcapng
	Packets     int    `json:"packets"` // IP packets read
	Skipped     int    `json:"skipped"` // frames that were not IP
	BadComments int    `json:"bad_comments,omitempty"`
	Role        string `json:"role,omitempty"` // in or out for --ingress / --egress
	// Oversize records claimed more than MaxRecord bytes and Malformed
	// pcapng blocks did not hold their own fields: both skipped unread.
	Oversize  int `json:"oversize,omitempty"`
	Malformed int `json:"malformed,omitempty"`
	// Truncated says how much of a cut-off last record was lost.
	Truncated *pcap.Truncation `json:"truncated,omitempty"`
}

// Warnings says, one line each, what of the file could not be read.
func (f *FileResult) Warnings() []string {
	return pcap.ReadWarnings(f.Path, f.Oversize, f.Malformed, f.Truncated)
}

// InterfaceResult is one capture interface (a pi2hop tap, or a tcpdump
// interface) with the capture's own statistics when the file has them.
type InterfaceResult struct {
	Name      string `json:"name"`
	Direction string `json:"direction"`
	Point     string `json:"point"` // in, out or drop
	Packets   uint64 `json:"packets"`
	// From pcapng interface statistics (-1 when the file has none):
	// packets the capture saw and those it dropped (not the hop's drops).
	CaptureReceived int64 `json:"capture_received"`
	CaptureDropped  int64 `json:"capture_dropped"`
}

// DirectionResult is one direction through the hop (up, down) or, for
// tcpdump captures, one capture point or ingress/egress pair.
type DirectionResult struct {
	Name string `json:"name"`
	// Classes holds the Classic queue first, then the L queue.
	Classes []*ClassResult `json:"classes"`
	Flows   []*FlowResult  `json:"flows"`
	Bins    []BinResult    `json:"bins"`
	// Transitions counts ECN codepoint changes from arrival to departure
	// (from annotations, or by matching packets between in and out).
	Transitions        []Transition `json:"transitions"`
	InvalidTransitions uint64       `json:"invalid_transitions"`
	// ECNFaultsChecked is true when the direction had an in and an out
	// point, so each flow's ECN field could be compared; FaultyFlows
	// counts the flows with an ECN path fault.
	ECNFaultsChecked bool   `json:"ecn_faults_checked"`
	FaultyFlows      uint64 `json:"faulty_flows"`
	// ChecksumErrors counts IPv4 headers with a wrong checksum, by point.
	ChecksumErrors map[string]uint64 `json:"checksum_errors"`
	// Matched packets were seen at both in and out (or in and drop);
	// UnmatchedIn never left (counted as drops with reason "unseen" when
	// there is no drop tap), UnmatchedOut left without being seen in.
	Matched      uint64   `json:"matched"`
	UnmatchedIn  uint64   `json:"unmatched_in"`
	UnmatchedOut uint64   `json:"unmatched_out"`
	Coupling     Coupling `json:"coupling"`
}

// ClassResult counts one queue's packets. Class comes from the
// annotation, else from the ECN codepoint at arrival (ECT(1) and CE are
// L4S, RFC 9331 §5.1).
type ClassResult struct {
	Class     string `json:"class"` // C or L
	In        uint64 `json:"in"`    // packets at the in tap
	InBytes   uint64 `json:"in_bytes"`
	Sent      uint64 `json:"sent"` // packets at the out tap (marked ones included)
	SentBytes uint64 `json:"sent_bytes"`
	Marked    uint64 `json:"marked"` // CE marks made by the hop
	Dropped   uint64 `json:"dropped"`
	// Annotated counts out and drop packets that carry the AQM's decision.
	Annotated uint64 `json:"annotated"`
	// MovedOut counts packets that came in as this class (their codepoint
	// at the in point) and were queued in the other; MovedIn the other
	// class's packets queued in this one. Only an ECN path fault before
	// the queue moves a packet, so In − MovedOut is what this queue was
	// offered of its own packets.
	MovedOut uint64 `json:"moved_out"`
	MovedIn  uint64 `json:"moved_in"`
	// DropsBy and MarksBy count by aqm.Reason name ("unknown" without
	// annotations, "unseen" for unmatched ingress packets).
	DropsBy map[string]uint64 `json:"drops_by,omitempty"`
	MarksBy map[string]uint64 `json:"marks_by,omitempty"`
	// MarkFraction is Marked / Sent; DropFraction Dropped / (Sent+Dropped).
	MarkFraction float64 `json:"mark_fraction"`
	DropFraction float64 `json:"drop_fraction"`
	// Sojourn is the AQM sojourn from annotations; Transit the time from
	// the in point to the out point of matched packets (sojourn plus
	// serialisation plus delay for hop taps).
	Sojourn Percentiles `json:"sojourn"`
	Transit Percentiles `json:"transit"`
	// sojournDist is Sojourn's whole distribution, for the CCDF plot.
	sojournDist figure.Dist
}

// Percentiles summarise a set of durations, in ms.
type Percentiles struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
	// RelativeError bounds each percentile's error relative to its exact
	// value when it comes from a sketch (SketchAccuracy); 0 when exact.
	RelativeError float64 `json:"relative_error,omitempty"`
}

// FlowResult counts one 5-tuple in one direction.
type FlowResult struct {
	Flow    string    `json:"flow"` // "tcp 10.0.0.1:5000 > 10.0.1.1:80"
	Key     FlowKey   `json:"-"`
	Class   string    `json:"class"` // "C", "L", or both in the order seen ("C+L")
	In      aqm.ByECN `json:"in"`
	Out     aqm.ByECN `json:"out"`
	Marked  uint64    `json:"marked"` // CE marks made by the hop
	Dropped uint64    `json:"dropped"`
	// ECNFaults names the ECN path faults the flow's packets show between
	// the in and out points (empty: none; see ECNFaultsChecked).
	ECNFaults []FlowFault `json:"ecn_faults,omitempty"`
}

// BinResult is one time bin of a direction, per class (C first, then L).
type BinResult struct {
	Start   float64     `json:"start_s"` // seconds since Result.Start
	Classes [2]BinClass `json:"classes"`
}

// BinClass is one class in one bin.
type BinClass struct {
	Sent         uint64  `json:"sent"`
	Marked       uint64  `json:"marked"`
	Dropped      uint64  `json:"dropped"`
	MarkFraction float64 `json:"mark_fraction"`
	DropFraction float64 `json:"drop_fraction"`
	SojournP50   float64 `json:"sojourn_p50_ms"`
	SojournP99   float64 `json:"sojourn_p99_ms"`
	// Prob is the mean p' (as a fraction) in the annotations of the bin.
	Prob float64 `json:"prob"`
}

// Transition counts packets whose codepoint went From → To.
type Transition struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Packets uint64 `json:"packets"`
	Valid   bool   `json:"valid"`
}

// ValidTransition reports whether a hop may turn codepoint in into out:
// unchanged, or ECT(0)/ECT(1) marked CE (RFC 3168 §5, RFC 9331 §5.1).
// Anything else (Not-ECT → CE, bleaching, ECT(0) ↔ ECT(1)) is a fault.
func ValidTransition(in, out aqm.ECN) bool {
	return in == out || (out == aqm.CE && (in == aqm.ECT0 || in == aqm.ECT1))
}

// Coupling compares the Classic queue's congestion signal to the L
// queue's: DualPI2 keeps pC = (pL/k)² (RFC 9332 §2.4, §4.1).
type Coupling struct {
	K float64 `json:"k"`
	// PL is the L queue's mark fraction (all marks, step marks included);
	// PLCoupled counts only marks made by the coupled probability (known
	// from annotations); PC is the Classic queue's AQM mark-or-drop
	// fraction (limit and link-loss drops left out when known).
	PL        float64 `json:"p_l"`
	PLCoupled float64 `json:"p_l_coupled"`
	PC        float64 `json:"p_c"`
	// Expected is (PL/K)², ExpectedCoupled (PLCoupled/K)²; Ratio is
	// PC/ExpectedCoupled with annotations, else PC/Expected (0 when not
	// defined). 1 means the queues are coupled as DualPI2 intends.
	Expected        float64 `json:"expected_p_c"`
	ExpectedCoupled float64 `json:"expected_p_c_coupled"`
	Ratio           float64 `json:"ratio"`
	// Defined is false when either queue carried no packets.
	Defined bool `json:"defined"`
}

// Direction returns the named direction, or nil.
func (r *Result) Direction(name string) *DirectionResult {
	i := slices.IndexFunc(r.Directions, func(d *DirectionResult) bool { return d.Name == name })
	if i < 0 {
		return nil
	}
	return r.Directions[i]
}

// Class returns the C or L class result.
func (d *DirectionResult) Class(c aqm.Class) *ClassResult {
	if c == aqm.Classic {
		return d.Classes[0]
	}
	return d.Classes[1]
}
