package testbed

import "fmt"

// notes explains, in the report, what the figures rest on.
func notes(c Config) []string {
	n := []string{
		fmt.Sprintf("Every figure leaves out the first %v of each run, the warm-up in which slow start and the AQM settle; "+
			"the time plots shade it.", c.Warmup),
		"Traffic flows server → client through the hop; the bottleneck rate and half the base RTT apply in each direction, " +
			"the same queue discipline in both.",
		"Queue delay is the sojourn dequeue − enqueue at the hop (delay line excluded), from its histograms (1.6 % buckets).",
		fmt.Sprintf("DualPI2 runs use the kernel's defaults but min_qlen_step %d (kernel: 0). With 0, an L4S packet that waits "+
			"behind one on the wire is step-marked whenever serialising that packet takes more than the 1 ms step threshold, "+
			"as a 1428-byte packet does below 11.4 Mbit/s; 1 exempts a packet that found the L queue empty, like RFC 9332's "+
			"rule of no step marking with a single packet queued.", *c.MinQlenStep),
		"The hop timing error is how late the hop handled its link events: every delay figure includes it, and a large tail " +
			"means the machine was too busy for the figures to be trusted. The machine floor is how late a real-time probe " +
			"thread that does nothing else woke at worst, and host steal the CPU time a hypervisor gave to others meanwhile: " +
			"lateness up to the floor was the machine's.",
	}
	switch c.Scenario {
	case "l4s-demo":
		n = append(n,
			fmt.Sprintf("Competing load: %d kernel TCP cubic downloads, ECN off (Not-ECT: Classic queue).", c.Bulk),
			"The call: 30 fps video over Prague congestion control, the same sender in every run; only its ECN codepoint differs "+
				"(L4S = ECT(1) with the Prague response; classic = Not-ECT, loss-only).",
			"Call RTT: per-ACK samples now − echoed timestamp at the sender, both ends timed at their kernel's receive time "+
				"(SO_TIMESTAMPNS), so the time an endpoint's thread took to wake up on this machine is not in it. "+
				"A pause of the machine's is: \"outside machine pauses\" leaves out the round trips that overlapped a time "+
				"between two of the hop's stats samples (about 20 ms) in which /proc/stat's steal grew or the floor probe woke over 1 ms late, "+
				"widened by the pause's length on each side, and the check of the L4S call's p99 is judged on those, when at least 500 are left (five above the p99). "+
				"Stalls: W3C webrtc-stats freeze rule (gap ≥ max(3·avg, avg + 150 ms)).",
			fmt.Sprintf("The FIFO run's buffer: %d packets tail drop (≈ %d KB of 1500-byte packets, %.0f ms at the bottleneck rate), "+
				"a deep buffer without queue management such as a home router's.", c.FIFOLimit, c.FIFOLimit*1500/1000,
				float64(c.FIFOLimit)*1500*8/float64(c.RateBps)*1000))
	case "coexist":
		n = append(n, "Rate ratio = L4S flow goodput / classic flow goodput; Jain's index over the two flows' mean goodputs.")
	case "bdp":
		n = append(n,
			"Predicted = min(window / RTT, link rate), the bandwidth-delay product formula of Cisco's technical note "+
				"\"Why Your Application only Uses 10Mbps Even the Link is 1Gbps?\" (17 520 B / 15 ms ≈ 9.34 Mbit/s); "+
				"measured = TCP payload goodput.",
			fmt.Sprintf("Window/RTT is a bound: cubic sends each window as a burst, and its last packet waits for the rest to "+
				"cross the bottleneck, so a round takes RTT + window/rate: 17 520 B at 15 ms over %s give %.2f Mbit/s.",
				fmtRate(float64(c.RateBps)), 17520*8/(0.015+17520*8/float64(c.RateBps))/1e6),
			"The receiver's window is pinned with TCP_WINDOW_CLAMP (and SO_RCVBUFFORCE of twice the window) before connect and "+
				"again after every read (Linux 6.x resets the clamp from the buffer size as the first segments arrive), the "+
				"sender's buffer with SO_SNDBUFFORCE; the kernel rounds the window down to whole segments (17 376 B for 17 520 B).",
			fmt.Sprintf("Link rate %s. The hop forwards in user space: rows whose window/RTT nears the link rate measure the hop's "+
				"forwarding ceiling on this machine and cubic's ramp-up as much as the window; only rows whose window/RTT is at most a quarter "+
				"of the link are checked against the prediction.", fmtRate(float64(c.RateBps))))
	case "prague":
		n = append(n, "Utilisation = bytes forwarded on the bottleneck / (rate · measured time). The checks judge it and the L queue's "+
			"p99 \"outside machine pauses\": over the stats intervals (about 20 ms) in which /proc/stat's steal did not grow and the floor "+
			"probe woke at most 1 ms late, each pause widened by its length on both sides, when those intervals are at least half the time.")
	}
	return n
}
