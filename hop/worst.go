package hop

// worstRing is how many closed intervals a Worst remembers: at the lab
// sampler's pace (a snapshot every 20 ms) over 5 s, so a reader polling
// once a second always finds every interval since its last read.
const worstRing = 256

// Worst keeps the largest of a series of durations (ns), exactly, for
// the whole run and per interval, so a reader holding two snapshots gets
// the worst value between them: a measured value, not a histogram edge.
// The writer Adds values and Closes an interval when it publishes; the
// zero value is ready.
type Worst struct {
	Max  int64            // worst since start, ns
	Seq  uint64           // intervals closed so far
	Ring [worstRing]int64 // worst of interval k at Ring[k%worstRing], ns
	cur  int64            // worst of the open interval
}

// Add records one value.
func (w *Worst) Add(v int64) {
	if v > w.cur {
		w.cur = v
		if v > w.Max {
			w.Max = v
		}
	}
}

// Close ends the open interval; a snapshot taken right after holds it.
func (w *Worst) Close() {
	w.Seq++
	w.Ring[w.Seq%worstRing] = w.cur
	w.cur = 0
}

// Since returns the worst value in the intervals closed after earlier (a
// snapshot of the same Worst) up to w. When the ring no longer holds all
// of them, it is exact if the run's worst rose meanwhile and otherwise
// bounded by the worst the ring still holds (ok false).
func (w *Worst) Since(earlier *Worst) (worst int64, ok bool) {
	n := w.Seq - earlier.Seq
	if w.Seq < earlier.Seq {
		return 0, false
	}
	if w.Max > earlier.Max {
		return w.Max, true
	}
	ok = n <= worstRing
	n = min(n, worstRing)
	for k := w.Seq - n + 1; k <= w.Seq; k++ {
		worst = max(worst, w.Ring[k%worstRing])
	}
	return worst, ok
}
