package netsys

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"

	"github.com/pi2hop/pi2hop/internal/statefile"
)

// Kinds of change a Journal records.
const (
	KindNetns  = "netns"  // a named namespace (Name)
	KindLink   = "link"   // a network device (Name) in NS
	KindAddr   = "addr"   // address Prefix on device Name in NS
	KindRoute  = "route"  // route to Prefix via device Name in Table, in NS
	KindRule   = "rule"   // policy rule: iif Name lookup Table, at Priority, Family 4 or 6, in NS
	KindSysctl = "sysctl" // sysctl Name (path under /proc/sys) in NS, previous value Old
	// KindNftTable is an nftables table Name (family inet) in NS.
	KindNftTable = "nft-table"
	// KindNftAccept is the accept rules tagged Name (their user data) in
	// chain Chain of the nftables table NftTable of family Family (the
	// kernel's number) in NS: rules put into a chain that is not ours.
	KindNftAccept = "nft-accept"
)

// Entry is one change made to the system, with what it takes to undo it.
// NS is the namespace the change was made in; "" is the host's.
type Entry struct {
	Kind     string `json:"kind"`
	NS       string `json:"ns,omitempty"`
	Name     string `json:"name,omitempty"`
	Prefix   string `json:"prefix,omitempty"`
	Table    int    `json:"table,omitempty"`
	Priority int    `json:"priority,omitempty"`
	Family   int    `json:"family,omitempty"`
	Gw       string `json:"gw,omitempty"`
	Old      string `json:"old,omitempty"`
	// Holder and Refs: a sysctl shared with other instances (see
	// Journal.ShareSysctls) is released from the reference record in
	// folder Refs under the name Holder, not simply written back.
	Holder string `json:"holder,omitempty"`
	Refs   string `json:"refs,omitempty"`
	// NftTable and Chain: where a KindNftAccept entry's rules are.
	NftTable string `json:"nft_table,omitempty"`
	Chain    string `json:"chain,omitempty"`
}

func (e Entry) String() string {
	where := ""
	if e.NS != "" {
		where = " in netns " + e.NS
	}
	switch e.Kind {
	case KindNetns:
		return "netns " + e.Name
	case KindAddr:
		return fmt.Sprintf("address %s on %s%s", e.Prefix, e.Name, where)
	case KindRoute:
		via := ""
		if e.Gw != "" {
			via = " via " + e.Gw
		}
		return fmt.Sprintf("route %s%s dev %s table %d%s", e.Prefix, via, e.Name, e.Table, where)
	case KindRule:
		return fmt.Sprintf("rule -%d pref %d iif %s lookup %d%s", e.Family, e.Priority, e.Name, e.Table, where)
	case KindNftTable:
		return fmt.Sprintf("nftables table inet %s%s", e.Name, where)
	case KindNftAccept:
		return fmt.Sprintf("nftables accept rules %s in chain %s of table %s (family %d)%s", e.Name, e.Chain, e.NftTable, e.Family, where)
	case KindSysctl:
		if e.Holder != "" {
			return fmt.Sprintf("sysctl %s (was %q; shared, held by %s)%s", e.Name, e.Old, e.Holder, where)
		}
		return fmt.Sprintf("sysctl %s (was %q)%s", e.Name, e.Old, where)
	}
	return fmt.Sprintf("%s %s%s", e.Kind, e.Name, where)
}

// Journal records every change made through it, in order, so Undo can
// reverse them. Each change is recorded (and saved, when a save function
// is set) before it is made, so a crash in between leaves a record; undoing
// a change that never happened or is already gone is not an error.
// A Journal is safe for concurrent use.
type Journal struct {
	mu      sync.Mutex
	entries []Entry
	save    func([]Entry) error
	refsDir string // ShareSysctls
	holder  string
	alive   func(holder string) bool
}

// NewJournal returns an empty journal. If save is not nil it is called
// with all entries after each change, e.g. to keep a state file current.
func NewJournal(save func([]Entry) error) *Journal {
	return &Journal{save: save}
}

// Entries returns a copy of the recorded changes, oldest first.
func (j *Journal) Entries() []Entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]Entry(nil), j.entries...)
}

// record appends e and saves. It returns a function that forgets e again,
// for when the change then fails.
func (j *Journal) record(e Entry) (forget func(), err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, e)
	i := len(j.entries) - 1
	if err := j.saveLocked(); err != nil {
		j.entries = j.entries[:i]
		return nil, err
	}
	return func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		if i < len(j.entries) && j.entries[i] == e {
			j.entries = append(j.entries[:i], j.entries[i+1:]...)
			j.saveLocked()
		}
	}, nil
}

// change records e and then makes the change with do. If do fails, the
// record is dropped again: the journal lists what may exist, and the
// record made first covers a crash in between.
func (j *Journal) change(e Entry, do func() error) error {
	forget, err := j.record(e)
	if err != nil {
		return err
	}
	if err := do(); err != nil {
		forget()
		return err
	}
	return nil
}

func (j *Journal) saveLocked() error {
	if j.save == nil {
		return nil
	}
	if err := j.save(append([]Entry(nil), j.entries...)); err != nil {
		return fmt.Errorf("netsys: save journal: %w", err)
	}
	return nil
}

// has reports whether an entry of kind k for name in ns was recorded.
func (j *Journal) has(kind, ns, name string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, e := range j.entries {
		if e.Kind == kind && e.NS == ns && e.Name == name {
			return true
		}
	}
	return false
}

// Undo reverses every recorded change, newest first, continuing past
// failures. Each change leaves the journal (and the saved state) only once
// it is undone, so a crash half way through leaves the rest on record;
// changes that could not be undone stay recorded. It returns the failures
// joined.
func (j *Journal) Undo() error {
	var errs []error
	j.mu.Lock()
	defer j.mu.Unlock()
	var failed []Entry
	for len(j.entries) > 0 {
		e := j.entries[len(j.entries)-1]
		if err := undo(e); err != nil {
			errs = append(errs, fmt.Errorf("undo %s: %w", e, err))
			failed = append(failed, e)
		}
		j.entries = j.entries[:len(j.entries)-1]
		all := append(append([]Entry(nil), j.entries...), reversed(failed)...)
		if j.save != nil {
			if err := j.save(all); err != nil {
				errs = append(errs, fmt.Errorf("netsys: save journal: %w", err))
			}
		}
	}
	j.entries = reversed(failed)
	return errors.Join(errs...)
}

func reversed(es []Entry) []Entry {
	r := make([]Entry, len(es))
	for i, e := range es {
		r[len(es)-1-i] = e
	}
	return r
}

// UndoEntries reverses es, newest first, continuing past failures.
func UndoEntries(es []Entry) error {
	var errs []error
	for i := len(es) - 1; i >= 0; i-- {
		if err := undo(es[i]); err != nil {
			errs = append(errs, fmt.Errorf("undo %s: %w", es[i], err))
		}
	}
	return errors.Join(errs...)
}

// SaveFile returns a save function for NewJournal that writes the entries
// as JSON to path (atomically, mode 0600), creating its directory.
func SaveFile(path string) func([]Entry) error {
	return func(es []Entry) error { return statefile.WriteJSON(path, es) }
}

// LoadFile reads entries written by SaveFile.
func LoadFile(path string) ([]Entry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var es []Entry
	if err := json.Unmarshal(b, &es); err != nil {
		return nil, fmt.Errorf("netsys: state file %s: %w", path, err)
	}
	return es, nil
}

// Route is a route to Dst through device Dev in routing table Table
// (0 = main), via gateway Gw if it is valid (else on-link).
type Route struct {
	Dst   netip.Prefix
	Dev   string
	Table int
	Gw    netip.Addr
}

// Rule is a policy-routing rule "iif IIF lookup Table" at Priority, for
// IPv4 (Family 4) or IPv6 (Family 6).
type Rule struct {
	Family   int
	IIF      string
	Table    int
	Priority int
}
