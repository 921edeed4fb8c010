package instance

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/shaper"
)

// Each kind resolves from its defaults with the knobs it takes.
func TestQueueSpecKinds(t *testing.T) {
	s := Settings{AQM: ptr(aqm.KindCoDel), Target: ptr(2 * time.Millisecond), Interval: ptr(50 * time.Millisecond),
		ECN: ptr(true), CEThreshold: ptr(time.Millisecond), Limit: ptr(uint32(500))}
	q, err := s.QueueSpec()
	want := aqm.CodelConfig{Limit: 500, Target: 2e6, Interval: 50e6, ECN: true, CEThreshold: 1e6, MTU: aqm.DefaultPschedMTU}
	if err != nil || q.CoDel != want {
		t.Errorf("codel: %+v, %v; want %+v", q.CoDel, err, want)
	}

	// PIE's gains in 1/16 Hz from the flags' Hz·256: 0.25 Hz = 64 → 4.
	s = Settings{AQM: ptr(aqm.KindPIE), Alpha: ptr(uint32(64)), Beta: ptr(uint32(16 * 32)), ECN: ptr(true), DQRateEstimator: ptr(true)}
	if q, err = s.QueueSpec(); err != nil || q.PIE.Alpha != 4 || q.PIE.Beta != 32 || !q.PIE.ECN || !q.PIE.DQRateEstimator {
		t.Errorf("pie: %+v, %v", q.PIE, err)
	}
	s.Alpha = ptr(uint32(41)) // 0.16 Hz: not a sixteenth
	var fe *FieldError
	if _, err = s.QueueSpec(); !errors.As(err, &fe) || fe.Field != "alpha" {
		t.Errorf("pie alpha 0.16 Hz: %v, want a FieldError on alpha", err)
	}
	s.Alpha = ptr(uint32(16 * 33)) // 33/16 Hz > 2
	var ce *aqm.ConfigError
	if _, err = s.QueueSpec(); !errors.As(err, &ce) || ce.Field != "alpha" {
		t.Errorf("pie alpha 33/16: %v, want a ConfigError on alpha", err)
	}

	s = Settings{AQM: ptr(aqm.KindFQCodel), CEThreshold: ptr(time.Millisecond), CESelector: ptr("0x01/0x01"),
		Flows: ptr(uint32(64)), Quantum: ptr(uint32(300)), MemLimit: ptr(uint64(1 << 20)), ECN: ptr(false)}
	if q, err = s.QueueSpec(); err != nil || q.FQCodel.CESelector != 1 || q.FQCodel.CEMask != 1 || q.FQCodel.Flows != 64 ||
		q.FQCodel.Quantum != 300 || q.FQCodel.MemoryLimit != 1<<20 || q.FQCodel.ECN {
		t.Errorf("fq_codel: %+v, %v", q.FQCodel, err)
	}
	s.CESelector = ptr("1")
	if _, err = s.QueueSpec(); !errors.As(err, &fe) || fe.Field != "ce-threshold-selector" {
		t.Errorf("selector without mask: %v", err)
	}

	s = Settings{AQM: ptr(aqm.KindDOCSIS), NQB: ptr(true), QueueProtection: ptr(false), Coupling: ptr(uint8(3))}
	if q, err = s.QueueSpec(); err != nil || !q.DOCSIS.NQB || q.DOCSIS.QProt.On || q.DOCSIS.DualPI2.Coupling != 3 ||
		q.DOCSIS.DualPI2.Target != aqm.DefaultDOCSISTarget {
		t.Errorf("docsis: %+v, %v", q.DOCSIS, err)
	}
	d, err := Settings{AQM: ptr(aqm.KindDOCSIS), Rate: ptr(uint64(20e6))}.Direction("up")
	if err != nil || d.Queue.DOCSIS.Rate != 20e6 {
		t.Errorf("docsis rate from the link: %d, %v", d.Queue.DOCSIS.Rate, err)
	}

	s = Settings{AQM: ptr(aqm.KindDualPI2), NQB: ptr(true)}
	if q, err = s.QueueSpec(); err != nil || !q.DualPI2.NQB {
		t.Errorf("dualpi2 nqb: %+v, %v", q.DualPI2, err)
	}
}

// A knob the kind does not take is refused, naming the kinds that do.
func TestQueueSpecForeignKnobs(t *testing.T) {
	for _, tc := range []struct {
		s    Settings
		key  string
		want string
	}{
		{Settings{AQM: ptr(aqm.KindCoDel), Tupdate: ptr(time.Millisecond)}, "tupdate", "dualpi2, pie, docsis"},
		{Settings{AQM: ptr(aqm.KindPIE), Interval: ptr(time.Millisecond)}, "codel-interval", "codel, fq_codel"},
		{Settings{AQM: ptr(aqm.KindDualPI2), Flows: ptr(uint32(8))}, "flows", "fq_codel"},
		{Settings{AQM: ptr(aqm.KindFQCodel), NQB: ptr(true)}, "nqb", "dualpi2, docsis"},
		{Settings{AQM: ptr("red")}, "aqm", "want one of"},
	} {
		_, err := tc.s.QueueSpec()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.key || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want a FieldError on %s mentioning %q", tc.s, err, tc.key, tc.want)
		}
	}
}

// Jitter and aggregation per direction: the specific level wins.
func TestLinkShapeSettings(t *testing.T) {
	s := Settings{Jitter: &Jitter{Amount: 2e6}, DownJitter: &Jitter{Amount: 5e6, Dist: shaper.DistNormal},
		UpAggregate: &Aggregate{Interval: 4e6, Bytes: 6000}}
	c, err := s.Resolve("t")
	if err != nil {
		t.Fatal(err)
	}
	if c.Up.Link.Jitter != (shaper.Jitter{Amount: 2e6}) || c.Down.Link.Jitter != (shaper.Jitter{Amount: 5e6, Dist: shaper.DistNormal}) {
		t.Errorf("jitter up %+v down %+v", c.Up.Link.Jitter, c.Down.Link.Jitter)
	}
	if c.Up.Link.Aggregate != (shaper.Aggregate{Interval: 4e6, Bytes: 6000}) || c.Down.Link.Aggregate.On() {
		t.Errorf("aggregate up %+v down %+v", c.Up.Link.Aggregate, c.Down.Link.Aggregate)
	}
	var fe *FieldError
	if _, err := (Settings{UpJitter: &Jitter{Amount: -1}}).Resolve("t"); !errors.As(err, &fe) || fe.Field != "up-jitter" {
		t.Errorf("negative jitter: %v, want a FieldError on up-jitter", err)
	}
	// A distribution is a name in JSON, and an unknown one is refused.
	var got Settings
	if err := json.Unmarshal([]byte(`{"down-jitter":{"amount":5000000,"dist":"normal"}}`), &got); err != nil || *got.DownJitter != *s.DownJitter {
		t.Errorf("decoding down-jitter: %+v, %v; want %+v", got.DownJitter, err, s.DownJitter)
	}
	if err := json.Unmarshal([]byte(`{"up-jitter":{"amount":1000000,"dist":"gamma"}}`), &got); err == nil || !strings.Contains(err.Error(), `distribution "gamma"`) {
		t.Errorf("bad distribution: %v, want an error naming it", err)
	}
	// A set request changes them live (hop.Reconfigure applies them).
	next, _, err := PlanSet(s, Settings{Jitter: &Jitter{Amount: 3e6}}, c)
	if err != nil || c.Up.Changes(next.Up) != hop.ChangeJitter || next.Up.Link.Jitter.Amount != 3e6 || c.Down.Changes(next.Down) != 0 {
		t.Errorf("next %+v, %v: want up jitter 3ms, down unchanged (its own)", next, err)
	}
}

// Under docsis, --alpha and --beta are the Classic AQM's gains, Hz·256
// each way: DOCSIS-PIE's A and B by default (RFC 8034's 0.25 Hz = 64 and
// 2.5 Hz = 640), the coupled core's PI2 gains (sch_dualpi2's 41 and 819,
// ≈ 0.16 and 3.2 Hz) with --docsis-classic pi2, which
// decides where they land although its row comes after theirs.
func TestDOCSISGains(t *testing.T) {
	half, one := uint32(128), uint32(256) // 0.5 Hz, 1 Hz
	for _, c := range []struct {
		classic   *string
		pie, core [2]uint32
	}{
		{nil, [2]uint32{128, 256}, [2]uint32{41, 819}},
		{ptr(aqm.DOCSISClassicPIE), [2]uint32{128, 256}, [2]uint32{41, 819}},
		{ptr(aqm.DOCSISClassicPI2), [2]uint32{64, 640}, [2]uint32{128, 256}},
	} {
		s := Settings{AQM: ptr(aqm.KindDOCSIS), DOCSISClassic: c.classic, Alpha: &half, Beta: &one}
		q, err := s.QueueSpec()
		pie, core := [2]uint32{q.DOCSIS.PIE.Alpha, q.DOCSIS.PIE.Beta}, [2]uint32{q.DOCSIS.DualPI2.Alpha, q.DOCSIS.DualPI2.Beta}
		if err != nil || pie != c.pie || core != c.core {
			t.Errorf("docsis-classic %v: DOCSIS-PIE %v, core %v, %v; want %v, %v", deref(c.classic, "unset"), pie, core, err, c.pie, c.core)
		}
		back := specSettings(q)
		if *back.Alpha != half || *back.Beta != one {
			t.Errorf("docsis-classic %v: reads back alpha %d beta %d, want %d %d", deref(c.classic, "unset"), *back.Alpha, *back.Beta, half, one)
		}
	}
	for key, want := range map[string]string{"alpha": "0.25", "beta": "2.5", "docsis-classic": "pie"} {
		if got, ok := KindDefault(key, aqm.KindDOCSIS); !ok || got != want {
			t.Errorf("docsis --%s default %q, %v; want %q", key, got, ok, want)
		}
	}
}
