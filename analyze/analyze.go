package analyze

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/pi2hop/pi2hop/rtt"
)

// Input is one capture file to analyse.
type Input struct {
	Path string
	// Role is "" to take each interface's role from its name (a pi2hop
	// tap "<dir>-in", "<dir>-out", "<dir>-drop"; any other name is one
	// capture point, counted as "in"), or "in" / "out" to treat every
	// packet of the file as seen before / after the bottleneck (two
	// tcpdump captures, one on each side).
	Role string
	// Direction names the direction for Role "in" / "out"; default "path".
	Direction string
}

// Options tune the analysis; the zero value is usable: Analyze and
// New replace each zero field by its default.
type Options struct {
	Bin       time.Duration // time bin for the series; 0 = 1s
	CouplingK float64       // DualPI2's coupling factor k; 0 = 2
}

// Validate checks opt as given, zero fields included (a CLI passes the
// values it was given, so an explicit 0 is refused, not defaulted). The
// one place the bounds live; the error is a *pcap.OptionError.
func (opt Options) Validate() error {
	if opt.Bin < time.Microsecond {
		return &pcap.OptionError{Option: "bin", Value: opt.Bin.String(), Want: "at least 1µs"}
	}
	if !(opt.CouplingK > 0 && opt.CouplingK <= 255) {
		return &pcap.OptionError{Option: "coupling", Value: strconv.FormatFloat(opt.CouplingK, 'g', -1, 64), Want: "in (0, 255], as sch_dualpi2's k"}
	}
	return nil
}

// withDefaults replaces zero fields by their defaults.
func (opt Options) withDefaults() Options {
	if opt.Bin == 0 {
		opt.Bin = time.Second
	}
	if opt.CouplingK == 0 {
		opt.CouplingK = 2
	}
	return opt
}

// maxBins bounds the series so a tiny --bin cannot exhaust memory.
const maxBins = 1 << 20

// Analyze reads every input and returns the analysis. The files are read
// together, packet by packet in time order, so that an ingress packet
// waits for its egress only as long as the path could hold it (see
// pendingSet) whichever files they are in. Every path is checked to be a
// file before any is read, so a typo fails fast.
func Analyze(inputs []Input, opt Options) (*Result, error) {
	a, err := New(opt)
	if err != nil {
		return nil, err
	}
	for _, in := range inputs {
		if err := checkFile(in.Path); err != nil {
			return nil, err
		}
	}
	if err := a.AddFiles(inputs); err != nil {
		return nil, err
	}
	return a.Result(), nil
}

// checkFile says what is wrong with a path that is not a readable file,
// in fewer words than os.Open.
func checkFile(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: no such file", path)
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory, not a capture file", path)
	}
	return nil
}

// Analyzer accumulates packets from any number of files.
type Analyzer struct {
	opt     Options
	bin     int64
	seed    maphash.Seed
	files   []FileResult
	ifaces  map[string]*InterfaceResult
	ifList  []string
	dirs    map[string]*dirAcc
	dirList []string
	// rtt times the flows of pi2hop's up and down taps (nil until one is
	// read); rttClass is the queue class each of its flows went to.
	rtt      *rtt.Table
	rttClass map[rttKey]uint8
}

// New fills in opt's defaults, checks it (Validate) and returns an
// empty Analyzer.
func New(opt Options) (*Analyzer, error) {
	opt = opt.withDefaults()
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	return &Analyzer{
		opt:    opt,
		bin:    int64(opt.Bin),
		seed:   maphash.MakeSeed(),
		ifaces: map[string]*InterfaceResult{},
		dirs:   map[string]*dirAcc{},
	}, nil
}

// point is where a packet was captured relative to the bottleneck.
type point uint8

const (
	pointIn point = iota
	pointOut
	pointDrop
)

var pointNames = [...]string{"in", "out", "drop"}

// splitTap reads "<dir>-<point>" from a pi2hop tap name.
func splitTap(name string) (dir string, p point) {
	for i, s := range pointNames {
		if d, ok := strings.CutSuffix(name, "-"+s); ok && d != "" {
			return d, point(i)
		}
	}
	return name, pointIn
}

// AddFile reads one capture file into the analysis. Files whose packets
// are to be matched (an ingress and an egress capture) go to AddFiles
// together.
func (a *Analyzer) AddFile(in Input) error { return a.AddFiles([]Input{in}) }

// source is one input file being read.
type source struct {
	in     Input
	forced point
	rank   int // at equal times: in, then unnamed roles, then out
	r      *pcap.Reader
	fr     FileResult
	routes map[string]route // roles by interface name, looked up once
	last   string
	rt     route
	next   *pcap.Packet // nil at the end of the file
}

type route struct {
	dir *dirAcc
	pt  point
	ifr *InterfaceResult
}

// AddFiles reads capture files into the analysis, merged by packet time.
func (a *Analyzer) AddFiles(inputs []Input) error {
	srcs := make([]*source, 0, len(inputs))
	defer func() {
		for _, s := range srcs {
			s.r.Close()
		}
	}()
	rank := map[string]int{"in": 0, "": 1, "out": 2}
	for _, in := range inputs {
		s := &source{in: in, rank: rank[in.Role], routes: map[string]route{}}
		switch in.Role {
		case "":
		case "in":
			s.forced = pointIn
		case "out":
			s.forced = pointOut
		default:
			return fmt.Errorf("%s: role %q: want in, out or empty", in.Path, in.Role)
		}
		if s.in.Direction == "" {
			s.in.Direction = "path"
		}
		r, err := pcap.Open(in.Path)
		if err != nil {
			return err
		}
		s.r = r
		s.fr = FileResult{Path: in.Path, Format: r.Format(), Role: in.Role}
		srcs = append(srcs, s)
		if err := s.advance(); err != nil {
			return err
		}
	}
	for {
		// The earliest next packet (a handful of files: a scan will do).
		var s *source
		for _, c := range srcs {
			if c.next != nil && (s == nil || c.next.Time < s.next.Time ||
				c.next.Time == s.next.Time && c.rank < s.rank) {
				s = c
			}
		}
		if s == nil {
			break
		}
		if err := a.packet(s, s.next); err != nil {
			return fmt.Errorf("%s: %w", s.in.Path, err)
		}
		if err := s.advance(); err != nil {
			return err
		}
	}
	// Files in the order roles are listed in: in, unnamed, out.
	slices.SortStableFunc(srcs, func(x, y *source) int { return x.rank - y.rank })
	for _, s := range srcs {
		if err := a.finish(s); err != nil {
			return err
		}
	}
	return nil
}

// advance reads s's next packet.
func (s *source) advance() error {
	p, err := s.r.Next()
	if errors.Is(err, io.EOF) {
		s.next = nil
		return nil
	}
	s.next = p
	return err
}

// packet routes one packet of s to its direction and capture point.
func (a *Analyzer) packet(s *source, p *pcap.Packet) error {
	if p.Interface != s.last || s.rt.dir == nil {
		var ok bool
		if s.rt, ok = s.routes[p.Interface]; !ok {
			dir, pt := splitTap(p.Interface)
			if s.in.Role != "" {
				dir, pt = s.in.Direction, s.forced
			}
			s.rt = route{dir: a.dir(dir), pt: pt, ifr: a.iface(p.Interface, dir, pt)}
			s.routes[p.Interface] = s.rt
		}
		s.last = p.Interface
	}
	h, ok := decodeIP(p.Data)
	if !ok {
		s.r.Skipped++
		return nil
	}
	s.fr.Packets++
	s.rt.ifr.Packets++
	return a.add(s.rt.dir, s.rt.pt, p, &h)
}

// finish records what s's reader counted and its capture statistics.
func (a *Analyzer) finish(s *source) error {
	r, fr, in := s.r, &s.fr, s.in
	fr.Skipped, fr.BadComments = r.Skipped, r.BadComments
	fr.Oversize, fr.Malformed, fr.Truncated = r.Oversize, r.Malformed, r.Truncated
	if fr.Packets == 0 && (fr.Oversize > 0 || fr.Malformed > 0) {
		// Nothing but damage: an analysis of it would look like an
		// empty capture.
		return fmt.Errorf("no packet read: %s", strings.Join(fr.Warnings(), "; "))
	}
	for name, st := range r.InterfaceStats() {
		ifr := a.ifaces[name]
		if ifr == nil { // a tap that wrote no packets, but has statistics
			dir, pt := splitTap(name)
			if in.Role != "" {
				dir, pt = in.Direction, s.forced
			}
			ifr = a.iface(name, dir, pt)
		}
		ifr.CaptureReceived = int64(st.PacketsReceived)
		ifr.CaptureDropped = int64(st.PacketsDropped)
	}
	a.files = append(a.files, *fr)
	return nil
}

func (a *Analyzer) iface(name, dir string, pt point) *InterfaceResult {
	if ifr := a.ifaces[name]; ifr != nil {
		return ifr
	}
	ifr := &InterfaceResult{Name: name, Direction: dir, Point: pointNames[pt], CaptureReceived: -1, CaptureDropped: -1}
	a.ifaces[name] = ifr
	a.ifList = append(a.ifList, name)
	return ifr
}

func (a *Analyzer) dir(name string) *dirAcc {
	if d := a.dirs[name]; d != nil {
		return d
	}
	d := newDirAcc(name)
	a.dirs[name] = d
	a.dirList = append(a.dirList, name)
	return d
}

// classOf is the DualPI2 classifier on the arriving codepoint
// (RFC 9332 §2.3: ECT(1) and CE go to the L queue).
func classOf(e aqm.ECN) int {
	if e == aqm.ECT1 || e == aqm.CE {
		return 1
	}
	return 0
}

func classIndex(c aqm.Class) int {
	if c == aqm.Classic {
		return 0
	}
	return 1
}

// classFor is the queue p went to: the one the hop's annotation names, or
// without one, the classifier's choice for codepoint e.
func classFor(p *pcap.Packet, e aqm.ECN) int {
	if p.HasAnn {
		return classIndex(p.Ann.Class)
	}
	return classOf(e)
}

// add counts one packet at point pt of direction d: what every point
// shares (length, checksum, bin, flow, match key), then the point's own.
func (a *Analyzer) add(d *dirAcc, pt point, p *pcap.Packet, h *ipHeader) error {
	length := h.totalLen
	if length == 0 || length > p.Length {
		length = p.Length // TSO super-packets carry 0; truncated lengths lie
	}
	if h.csumChecked && !h.csumOK {
		d.csumErr[pt]++
	}
	bin, err := d.binFor(p.Time/a.bin - boolI64(p.Time < 0))
	if err != nil {
		return err
	}
	s := sighting{length: length, bin: bin, f: d.flow(h.flow), key: h.matchKey(a.seed, p.Data)}
	switch pt {
	case pointIn:
		d.addIn(p, h, &s)
		if d.name == "up" {
			a.addRTT(d.name, p, h) // from the client, as it reaches the hop
		}
	case pointOut:
		d.addOut(p, h, &s)
		if d.name == "down" {
			a.addRTT(d.name, p, h) // to the client, as it leaves the hop
		}
	case pointDrop:
		d.addDrop(p, h, &s)
	}
	return nil
}

// sighting is what add worked out for a packet at one capture point. It
// holds no pointer to the packet or its header, so neither escapes.
type sighting struct {
	length int
	bin    int64
	f      *flowAcc
	key    uint64
}

// addIn counts a packet before the bottleneck and keeps it to be matched
// at its out or drop point.
func (d *dirAcc) addIn(p *pcap.Packet, h *ipHeader, s *sighting) {
	d.sawIn = true
	cls := classFor(p, h.ecn)
	c := d.classes[cls]
	c.res.In++
	c.res.InBytes += uint64(s.length)
	s.f.res.In.Add(h.ecn, s.length)
	s.f.saw(cls)
	s.f.fault.in[h.ecn]++
	d.pend.push(s.key, pending{at: p.Time, flow: s.f, class: int8(cls), ecn: h.ecn, tos: h.tos, bin: s.bin})
}

// addOut counts a packet after the bottleneck: sent, marked (by the
// annotation, or by CE that was not there on the way in), its sojourn
// and its transit time when matched.
func (d *dirAcc) addOut(p *pcap.Packet, h *ipHeader, s *sighting) {
	d.sawOut = true
	m, matched := d.pend.pop(s.key)
	if matched {
		d.matched++
	} else {
		d.unmatchedOut++
	}
	ecnIn, knownIn := h.ecn, false
	switch {
	case p.HasAnn:
		ecnIn, knownIn = p.Ann.ECNIn, true
	case matched:
		ecnIn, knownIn = m.ecn, true
	}
	cls := classFor(p, ecnIn)
	c := d.classes[cls]
	c.res.Sent++
	c.res.SentBytes += uint64(s.length)
	s.f.res.Out.Add(h.ecn, s.length)
	s.f.saw(cls)
	b := &d.binAt(s.bin).cls[cls]
	b.sent++
	var marked bool
	reason := "unknown"
	if p.HasAnn && p.Ann.HasDecision {
		marked = p.Ann.Verdict.Action == aqm.Mark
		reason = reasonName(p.Ann.Verdict.Reason)
		c.res.Annotated++
		c.sojourn.add(s.bin, p.Ann.Sojourn)
		b.probSum += aqm.ProbFloat(p.Ann.Prob)
		b.probN++
	} else if knownIn {
		marked = h.ecn == aqm.CE && ecnIn != aqm.CE
	}
	if marked {
		c.res.Marked++
		c.res.MarksBy[reason]++
		s.f.res.Marked++
		b.marked++
	}
	if knownIn {
		d.trans[ecnIn][h.ecn]++
	}
	if matched {
		d.addTransit(c, p.Time-m.at)
		m.flow.fault.addOut(p, h, &m)
		d.moved(int(m.class), cls)
	}
}

// moved counts a matched packet that came in as class from and was
// queued in class to, when they differ: an ECN path fault before the
// queue rewrote its codepoint.
func (d *dirAcc) moved(from, to int) {
	if from != to {
		d.classes[from].res.MovedOut++
		d.classes[to].res.MovedIn++
	}
}

// addDrop counts a packet the bottleneck dropped, by reason when annotated.
func (d *dirAcc) addDrop(p *pcap.Packet, h *ipHeader, s *sighting) {
	d.sawDrop = true
	m, matched := d.pend.pop(s.key)
	if matched {
		d.matched++
		m.flow.fault.missing[m.ecn]++
	}
	cls := classOf(h.ecn)
	switch {
	case p.HasAnn:
		cls = classIndex(p.Ann.Class)
	case matched:
		cls = int(m.class)
	}
	if matched {
		d.moved(int(m.class), cls)
	}
	reason := "unknown"
	if p.HasAnn && p.Ann.HasDecision {
		reason = reasonName(p.Ann.Verdict.Reason)
		d.classes[cls].res.Annotated++
		b := &d.binAt(s.bin).cls[cls]
		b.probSum += aqm.ProbFloat(p.Ann.Prob)
		b.probN++
	}
	d.drop(cls, reason, s.f, s.bin)
}

func boolI64(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func className(cls int) string { return [2]string{"C", "L"}[cls] }

func reasonName(r aqm.Reason) string {
	if r == aqm.ReasonNone {
		return "none"
	}
	return r.String()
}
