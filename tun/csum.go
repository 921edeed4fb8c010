package tun

import (
	"encoding/binary"
	"math/bits"
)

// The Internet checksum (RFC 1071): the ones' complement sum of 16-bit
// big-endian words. Ones' complement addition is associative and
// commutative, so the sum can be taken 64 bits at a time with an
// end-around carry and folded to 16 bits at the end (RFC 1071 §2(B)).

// sum adds b to the running ones' complement sum acc (not folded).
// An odd trailing byte counts as the high byte of a word padded with zero.
func sum(b []byte, acc uint64) uint64 {
	var c uint64
	for len(b) >= 32 {
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b), c)
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b[8:]), c)
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b[16:]), c)
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b[24:]), c)
		b = b[32:]
	}
	for len(b) >= 8 {
		acc, c = bits.Add64(acc, binary.BigEndian.Uint64(b), c)
		b = b[8:]
	}
	if len(b) >= 4 {
		acc, c = bits.Add64(acc, uint64(binary.BigEndian.Uint32(b)), c)
		b = b[4:]
	}
	if len(b) >= 2 {
		acc, c = bits.Add64(acc, uint64(binary.BigEndian.Uint16(b)), c)
		b = b[2:]
	}
	if len(b) == 1 {
		acc, c = bits.Add64(acc, uint64(b[0])<<8, c)
	}
	return addCarry(acc, c)
}

// addCarry adds x to acc with the end-around carry of ones' complement.
func addCarry(acc, x uint64) uint64 {
	s, c := bits.Add64(acc, x, 0)
	return s + c // s+c cannot carry again: s is at most 2^64-2 when c is 1
}

// fold reduces a 64-bit ones' complement sum to 16 bits.
func fold(acc uint64) uint16 {
	acc = (acc >> 32) + (acc & 0xffffffff)
	acc = (acc >> 32) + (acc & 0xffffffff)
	acc = (acc >> 16) + (acc & 0xffff)
	acc = (acc >> 16) + (acc & 0xffff)
	return uint16(acc)
}

// pseudoSum is the (unfolded) sum of the TCP/UDP pseudo-header: source
// and destination address, protocol and L4 length (RFC 9293 §3.1 for IPv4,
// RFC 8200 §8.1 for IPv6; the zero bytes add nothing).
func pseudoSum(src, dst []byte, proto uint8, l4len int) uint64 {
	acc := sum(src, 0)
	acc = sum(dst, acc)
	return addCarry(acc, uint64(proto)+uint64(l4len))
}

// l4Checksum is the value for the checksum field of a TCP or UDP segment
// whose field currently holds zero: the complement of pseudo-header plus
// segment. A computed zero is sent as all ones, as the kernel's software
// checksum does (CSUM_MANGLED_0): UDP must (zero there means "no
// checksum", RFC 768), and for TCP the two are the same ones' complement
// number.
func l4Checksum(pseudo uint64, l4 []byte) uint16 {
	c := ^fold(sum(l4, pseudo))
	if c == 0 {
		c = 0xffff
	}
	return c
}

// ipv4HeaderChecksum is the value for an IPv4 header's checksum field,
// computed over the header with that field taken as zero.
func ipv4HeaderChecksum(h []byte) uint16 {
	acc := sum(h[:10], 0)
	acc = sum(h[12:], acc)
	return ^fold(acc)
}
