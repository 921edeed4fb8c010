package aqm

import (
	"fmt"
	"math/rand/v2"
)

// NewQueue builds the queue discipline s names. rng feeds DualPI2's
// mark/drop rolls (the FIFO needs none).
func NewQueue(s Spec, rng *rand.Rand) (Queue, error) {
	switch s.Kind {
	case KindDualPI2:
		return NewDualPI2(s.DualPI2, rng)
	case KindFIFO:
		return NewFIFO(s.FIFO)
	}
	return nil, fmt.Errorf("queue kind %q: want %q or %q", s.Kind, KindDualPI2, KindFIFO)
}

// ProbFloat converts a raw probability (MaxProb ≙ 1.0) to a float, as tc
// prints the dualpi2 prob statistic.
func ProbFloat(raw uint32) float64 { return float64(raw) / MaxProb }
