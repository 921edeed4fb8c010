package instance

import (
	"context"

	"github.com/pi2hop/pi2hop/hop"
)

// Task is a topology that builds hops of its own, one after another (the
// lab's runs): the instance gives it the lifecycle (privileges, the
// capture, the start-up line, the order of teardown) but no control
// socket, as there is no one hop to serve.
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
