package hop

// slab is a direction's fixed set of packet buffers, indexed by slot (the
// aqm.Meta.Slot of a queued packet), with a free list: nothing is
// allocated per packet.
type slab struct {
	mem  []byte
	size int // bytes per slot
	free []int32
}

func newSlab(slots, size int) *slab {
	s := &slab{mem: make([]byte, slots*size), size: size, free: make([]int32, slots)}
	for i := range s.free {
		s.free[i] = int32(slots - 1 - i) // pop hands out slot 0 first
	}
	return s
}

// get takes a free slot; ok is false when every slot is in use.
func (s *slab) get() (slot int32, ok bool) {
	n := len(s.free)
	if n == 0 {
		return -1, false
	}
	slot = s.free[n-1]
	s.free = s.free[:n-1]
	return slot, true
}

// put returns slot to the free list.
func (s *slab) put(slot int32) { s.free = append(s.free, slot) }

// buf returns slot's whole buffer.
func (s *slab) buf(slot int32) []byte {
	off := int(slot) * s.size
	return s.mem[off : off+s.size : off+s.size]
}

func (s *slab) slots() int { return len(s.mem) / s.size }
func (s *slab) inUse() int { return s.slots() - len(s.free) }
