package instance

import (
	"context"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/netsys"
)

// Task is a topology that builds hops of its own, one after another (the
// lab's runs): the instance gives it the lifecycle (privileges, the
// capture, the start-up line, the order of teardown) but no control
// socket, as there is no one hop to serve. A named Task has a state file
// and a journal like any instance: what it records in env.Journal a
// cleanup undoes after a crash.
type Task struct {
	Name string // Kind
	Info []any  // Attrs
	Do   func(ctx context.Context, env *Env) error
	env  *Env
}

func (t *Task) Kind() string { return t.Name }
func (t *Task) Attrs() []any { return t.Info }
func (t *Task) Close() error { return nil }

func (t *Task) Start(ctx context.Context, env *Env) (*hop.Hop, error) {
	t.env = env
	return nil, nil
}

func (t *Task) Wait(ctx context.Context) error { return t.Do(ctx, t.env) }

// LabPrefix starts the names of the namespaces the lab instance name
// makes: testbed adds a letter per run and "c" or "s".
func LabPrefix(name string) string { return "p2l-" + name + "-" }

// labLeftovers: a lab's namespaces outlive its process (the TUN devices
// in them go with them).
func labLeftovers(name string) []netsys.Entry {
	var es []netsys.Entry
	for c := 'a'; c <= 'z'; c++ {
		for _, end := range []string{"c", "s"} {
			es = append(es, netsys.Entry{Kind: netsys.KindNetns, Name: LabPrefix(name) + string(c) + end})
		}
	}
	return es
}
