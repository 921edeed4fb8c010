package aqm

import (
	"errors"
	"math/rand/v2"
)

// NewQueue builds the queue discipline s names: the one place a kind
// becomes a queue. rng feeds the mark/drop rolls of DualPI2, PIE and
// docsis (the others need none, and it may then be nil).
func NewQueue(s Spec, rng *rand.Rand) (Queue, error) {
	switch s.Kind {
	case KindDualPI2:
		return NewDualPI2(s.DualPI2, rng)
	case KindFIFO:
		return NewFIFO(s.FIFO)
	case KindCoDel:
		return NewCoDel(s.CoDel)
	case KindPIE:
		return NewPIE(s.PIE, rng)
	case KindFQCodel:
		return NewFQCodel(s.FQCodel)
	case KindDOCSIS:
		return NewDOCSIS(s.DOCSIS, rng)
	}
	return nil, &UnknownKindError{s.Kind}
}

// ChangeQueue applies next to a running queue built from a Spec of the
// same kind (tc qdisc change); packets a lower limit drops go to drop.
func ChangeQueue(q Queue, next Spec, now int64, drop func(Meta)) error {
	switch q := q.(type) {
	case *DualPI2:
		return q.Change(next.DualPI2, now, drop)
	case *CoDel:
		return q.Change(next.CoDel, now, drop)
	case *PIE:
		return q.Change(next.PIE, now, drop)
	case *FQCodel:
		return q.Change(next.FQCodel, now, drop)
	case *DOCSIS:
		return q.Change(next.DOCSIS, now, drop)
	case *FIFO:
		if next.FIFO != q.cfg {
			return errors.New("fifo limits cannot change while running (restart instead)")
		}
		return nil
	}
	return errors.New("queue: unknown discipline")
}

// ProbFloat converts a raw probability (MaxProb ≙ 1.0) to a float, as tc
// prints the dualpi2 prob statistic.
func ProbFloat(raw uint32) float64 { return float64(raw) / MaxProb }
