package commentlint

import (
	"slices"
	"testing"
)

// TestMatch pins the matcher: each row's text yields exactly the rules
// listed, in order, and the near-misses (RFC numbers, constants with their
// meaning, version strings, sizes, quantities after "stop", the video
// session, WWDC's session number) yield none.
func TestMatch(t *testing.T) {
	for _, tt := range []struct {
		text string
		want []string // rules, in the order Match reports them
	}{
		// Dates.
		{"Six runs on 2026-12-03 added 0.12 ms", []string{"date"}},
		{"as of 2026-12", []string{"date"}},
		{"since 2025- the figure moved", []string{"date"}},
		{"measured in Dec 2026 on the VM", []string{"date"}},
		{"on December 3, 2026", []string{"date"}},
		{"on 3 Dec 2026", []string{"date"}},
		{"Sept 2025", []string{"date"}},
		{"a date broken\n across lines: Dec\n 2026", []string{"date"}},
		// Issue numbers.
		{"issue 12's bounds", []string{"issue"}},
		{"Issue 9's target is 0.3 ms", []string{"issue"}},
		{"(issues 3 and 10, make bench-hop)", []string{"issue"}},
		{"see issue #4", []string{"issue"}},
		{"PR #31 moved it", []string{"issue"}},
		{"the issue\n 12 acceptance", []string{"issue"}},
		// Session and round history.
		{"the same on the code of two sessions ago", []string{"history"}},
		{"as in the previous session", []string{"history"}},
		{"tried in stop 3, reverted", []string{"history"}},
		{"round 2 took it to 40 µs", []string{"history"}},
		// Citations that name no source.
		{"Behaviour 6: the ramp", []string{"cite"}},
		{"Behaviours 10, 11 and 12", []string{"cite"}},
		{"the frame rules (§4.2)", []string{"cite"}},
		{"every figure (§6: 5 s)", []string{"cite"}},
		{"RFC 9332 §2.1 and the frame rules §4.2", []string{"cite"}},
		// Several in one text, in rule order.
		{"issue 4's bounds of 2026-11-30", []string{"date", "issue"}},

		// Near-misses: none of these is history.
		{"RFC 9332 §2.1: p_C = p'²", nil},
		{"RFC 8290 §1.2 / §4.1", nil},
		{"RFC 9332 §4.2.3, §5 and §6", nil},
		{"an RFC\n 3168 §6.1.1 router", nil},
		{"draft-ietf-opsawg-pcap §4, as libpcap", nil},
		{"docs/design.md §3", nil},
		{"CableLabs Annexes M-P §2", nil},
		{"1 ms, the L4S step threshold", nil},
		{"a 2048-byte buffer and 1500-byte packets", nil},
		{"1000-2000 packets in flight", nil},
		{"module v1.7.3-0.20250113171957-fbb4dce95f42", nil},
		{"go 1.26.8, kernel 6.18", nil},
		{"gopacket v1.7.7 and miekg/dns v1.1.73", nil},
		{"WWDC23 session 10004", nil},
		{"the session runs from its first to its last packet", nil},
		{"frames stop 2 s before the end", nil},
		{"pings stop 10 ms apart", nil},
		{"round 3 packets up to a multiple", nil},
		{"round trip time, rounds of the PI update", nil},
		{"this may 2000 times", nil},
		{"Marking 2000 packets", nil},
		{"an issue with the kernel's rounding", nil},
		{"the 20 ms RTT, 10 Mbit/s", nil},
		{"year 2026 alone is not a date", nil},
		{"a #define in the kernel's header", nil},
		{"packet #2 of the burst", nil},
		{"the first pass of cold code", nil},
	} {
		var got []string
		for _, h := range Match(tt.text) {
			got = append(got, h.Rule)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Match(%q) = %v (%+v), want %v", tt.text, got, Match(tt.text), tt.want)
		}
	}
}

// TestCitations pins what counts as a cited document: Markdown files with
// or without folders, repository paths of Go files and absolute paths of
// the machine; kernel and upstream sources, URLs' hosts and Go package
// paths are not.
func TestCitations(t *testing.T) {
	for _, tt := range []struct {
		text string
		want []string
	}{
		{"(DESIGN.md: such packets are Classic)", []string{"DESIGN.md"}},
		{"as reference/l4s-endpoints.md §6 defines", []string{"reference/l4s-endpoints.md"}},
		{"see docs/design.md, the data path.", []string{"docs/design.md"}},
		{"the report.md and report.json", []string{"report.md"}},
		{"(testbed/checks.go)", []string{"testbed/checks.go"}},
		{"in /work/shared/reference/dualpi2.md", []string{"/work/shared/reference/dualpi2.md"}},
		{"net/sched/sch_dualpi2.c, dualpi2_roll", nil},
		{"prague_cc.cpp and pkt_format.h", nil},
		{"include/uapi/linux/if_tun.h", nil},
		{"checks.go beside it", nil},
		{"golang.org/x/sys/unix and net/netip", nil},
		{"a .md file", nil},
		{"/proc/sys/net/ipv4/ip_forward and /dev/cpu_dma_latency", nil},
		{"a socket under /tmp/pi2hop/ctl", nil},
		{"/home/dev/notes.txt", []string{"/home/dev/notes.txt"}},
	} {
		if got := Citations(tt.text); !slices.Equal(got, tt.want) {
			t.Errorf("Citations(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}
