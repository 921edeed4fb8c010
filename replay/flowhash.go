package replay

import "github.com/pi2hop/pi2hop/aqm"

// FlowKey is the key a replay of the given seed hashes CSV flow ids with:
// the seed's two halves folded together, so each seed separates flows its
// own way, as each boot of a kernel does with its random hash key.
func FlowKey(seed uint64) uint32 { return uint32(seed) ^ uint32(seed>>32) }

// CSVFlowHash is the flow hash a CSV trace's flow id stands for: that of
// the IPv4 UDP 5-tuple 198.18.0.1 → 198.18.0.2 (the benchmarking range,
// RFC 2544) whose source and destination ports are the id's upper and
// lower 16 bits, keyed by key (aqm.Header.FlowHashKeyed). Every id is
// its own 5-tuple, so a flow-queuing discipline spreads the ids over its
// buckets as the kernel spreads real flows; using the id as the hash
// itself would put every small id in bucket 0 once reciprocal-scaled.
func CSVFlowHash(id, key uint32) uint32 {
	var h [24]byte
	h[0] = 0x45
	h[3] = 24 // total length: header and the ports' word
	h[9] = 17 // UDP
	h[12], h[13], h[14], h[15] = 198, 18, 0, 1
	h[16], h[17], h[18], h[19] = 198, 18, 0, 2
	h[20], h[21], h[22], h[23] = byte(id>>24), byte(id>>16), byte(id>>8), byte(id)
	return aqm.Header(h[:]).FlowHashKeyed(key)
}
