package pcap

import "github.com/pi2hop/pi2hop/shaper"

// HopTap feeds a hop's in, out and drop taps of both directions into a
// Capture; it satisfies hop.Tap. It runs on the hop's owner threads: Packet
// never blocks and copies what it keeps, and when the writer falls behind
// capture records are dropped (counted in the file's interface
// statistics), never packets.
//
// pcap sits below hop in the import graph, so it cannot name hop.Dir or
// hop.TapPoint: dir and point arrive as their integer values, 0 = up and
// 1 = down, 0 = in, 1 = out and 2 = drop, the order hop declares them in
// (hop's tests pin it against this type).
type HopTap struct {
	c   *Capture
	ids [2][3]int // interface id by [dir][point]
}

// hopDirNames are hop.Dir's names, in its order.
var hopDirNames = [2]string{"up", "down"}

// NewHopTap adds the six taps to c, named prefix+"up-in", prefix+"up-out",
// ..., prefix+"down-drop", so several hops (the lab's runs) can share one
// file and analyze reports each prefix+direction apart.
func NewHopTap(c *Capture, prefix string) *HopTap {
	t := &HopTap{c: c}
	for d, name := range hopDirNames {
		taps := c.AddTaps(prefix + name)
		t.ids[d] = [3]int{taps.In, taps.Out, taps.Drop} // hop.TapIn, TapOut, TapDrop
	}
	return t
}

// Packet offers one tapped packet: ev is nil at the in point (no decision
// yet), the link's event at out and drop. An out-of-range dir or point is
// not a tap this type made and is ignored.
func (t *HopTap) Packet(dir, point int, at int64, pkt []byte, ev *shaper.Event) {
	if uint(dir) >= uint(len(t.ids)) || uint(point) >= uint(len(t.ids[0])) {
		return
	}
	id := t.ids[dir][point]
	if ev == nil {
		t.c.Offer(id, at, pkt, nil)
		return
	}
	a := EventAnnotation(ev)
	t.c.Offer(id, at, pkt, &a)
}
