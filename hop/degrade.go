package hop

// Degradation is something the hop would do with more privilege and does
// without: named, with its effect, for the start-up output and reports.
type Degradation struct {
	Name   string `json:"name"`   // "realtime", "cpu_latency"
	Reason string `json:"reason"` // what is missing
	Effect string `json:"effect"` // what it costs
}

// String is the one start-up line a person reads.
func (d Degradation) String() string { return d.Reason + ": " + d.Effect }

// Degradations lists what a hop with cfg would fall back on in this
// process (before it starts: the owners take their priority later and
// must not fail then). None when everything it asks for is permitted.
func Degradations(cfg Config) []Degradation {
	var out []Degradation
	why := ""
	if cfg.Priority > 0 {
		why = realTimeRefused(cfg.Priority)
	}
	if why != "" {
		out = append(out, Degradation{Name: "realtime", Reason: why,
			Effect: "pacing degraded: the owners run at normal priority, so on a busy machine their wake-ups can come ms late, as delay and rate error"})
	}
	if cfg.CPULatency >= 0 && !cpuLatencyAllowed() {
		out = append(out, Degradation{Name: "cpu_latency",
			Reason: "no writable /dev/cpu_dma_latency",
			Effect: "no PM QoS request: idle CPUs may sleep deep and wake the owners late"})
	}
	return out
}
