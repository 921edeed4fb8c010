package check

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCPUIdle: PM QoS keeps idle CPUs awake only through a cpuidle
// driver's states (kernel's cpuidle_idle_call falls back to the
// architecture's halt when there is none), and idle=poll spins whatever
// the driver.
func TestCPUIdle(t *testing.T) {
	for _, tt := range []struct {
		name            string
		driver, cmdline string // "" = the file is missing
		status, detail  string
		fix             bool
	}{
		{"intel", "intel_idle\n", "quiet", OK, "cpuidle driver intel_idle: the hop's PM QoS request keeps idle CPUs in shallow states", false},
		{"haltpoll", "haltpoll\n", "quiet", OK, "cpuidle driver haltpoll: the hop's PM QoS request keeps idle CPUs in shallow states", false},
		{"none", "none\n", "console=ttyS0 quiet", Note, "no cpuidle driver: idle CPUs halt whatever PM QoS asks, so --cpu-latency cannot keep them awake; on a VM every wake-up of a halted CPU waits for the host", true},
		{"no cpuidle", "", "quiet", Note, "no cpuidle driver: idle CPUs halt whatever PM QoS asks, so --cpu-latency cannot keep them awake; on a VM every wake-up of a halted CPU waits for the host", true},
		{"idle=poll", "none\n", "quiet idle=poll", OK, "idle=poll: idle CPUs spin, and wake at once", false},
		{"idle=poll's prefix is not it", "none\n", "idle=pollx", Note, "no cpuidle driver: idle CPUs halt whatever PM QoS asks, so --cpu-latency cannot keep them awake; on a VM every wake-up of a halted CPU waits for the host", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(name, s string) string {
				p := filepath.Join(dir, name)
				if s != "" {
					if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				return p
			}
			f := cpuIdle(write("current_driver", tt.driver), write("cmdline", tt.cmdline))
			if f.Check != "cpu idle" || f.Status != tt.status || f.Detail != tt.detail || (f.Fix != "") != tt.fix {
				t.Errorf("cpuIdle = %+v, want status %s, detail %q, a fix %v", f, tt.status, tt.detail, tt.fix)
			}
		})
	}
}
