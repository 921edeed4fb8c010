package instance

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/pi2hop/pi2hop/shaper"
)

// ProfilesJSON is `pi2hop profiles --json`: {"profiles": [...]}.
func ProfilesJSON(ps []ProfileInfo) ([]byte, error) {
	return json.Marshal(struct {
		Profiles []ProfileInfo `json:"profiles"`
	}{ps})
}

// WriteProfiles prints each profile: its heading (WriteHeading), the
// flags it stands for, the mean rate of each trace it uses, and its
// sources.
func WriteProfiles(w io.Writer, ps []ProfileInfo) {
	for i, p := range ps {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if !p.WriteHeading(w) {
			continue
		}
		fmt.Fprintf(w, "  flags: %s\n", strings.Join(p.Args, " "))
		for _, t := range p.Traces {
			fmt.Fprintf(w, "  %s: mean %s over a %g s loop\n", t.Name, shaper.FormatRate(t.MeanBPS), float64(t.LoopMs)/1000)
		}
		for _, s := range p.Sources {
			fmt.Fprintf(w, "  - %s\n", s)
		}
	}
}
