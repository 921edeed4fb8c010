package hop

// The control path of an owner: live changes (reconfigure from any
// goroutine, takeEdits and apply on the owner, between batches).

import (
	"errors"

	"github.com/pi2hop/pi2hop/aqm"
)

// reconfigure hands next to the owner and waits until it is applied.
func (o *owner) reconfigure(next DirConfig) error {
	req := editReq{next: next, reply: make(chan error, 1)}
	select {
	case <-o.exited:
		return errors.New("not running")
	default:
	}
	o.waker.signal()
	select {
	case o.edits <- req:
	case <-o.exited:
		return errors.New("not running")
	}
	return <-req.reply
}

// takeEdits applies pending reconfigurations, between batches.
func (o *owner) takeEdits() {
	for {
		select {
		case req := <-o.edits:
			req.reply <- o.apply(req.next)
		default:
			return
		}
	}
}

// apply changes the link and queue to next (checked by Reconfigure),
// only the parts that differ from the running configuration.
func (o *owner) apply(next DirConfig) error {
	c := o.cfg.Changes(next)
	now := clock()
	o.release(now) // what was due happens under the old settings
	if c&ChangeQueue != 0 {
		if err := aqm.ChangeQueue(o.link.Queue(), next.Queue, now, o.dropFn); err != nil {
			return err
		}
	}
	if c&ChangeJitter != 0 {
		if err := o.link.SetJitter(next.Link.Jitter); err != nil {
			return err
		}
	}
	if c&ChangeAggregate != 0 {
		if err := o.link.SetAggregate(next.Link.Aggregate, now); err != nil {
			return err
		}
	}
	if c&ChangeRate != 0 {
		o.link.SetRate(next.Link.Rate, now) // a schedule starts over
	}
	if c&ChangeDelay != 0 {
		o.link.SetDelay(next.Link.Delay) // packets in the delay line keep theirs
	}
	if c&ChangeLoss != 0 {
		o.link.SetLoss(next.Link.Loss)
	}
	if c&ChangeFault != 0 {
		o.link.SetFault(next.Link.Fault, now) // after= counts from now
	}
	o.cfg = next
	o.rep.setNames(next.Link)
	if o.rep.flows != nil && c&(ChangeRate|ChangeQueue) != 0 {
		o.rep.flows.setScorer(qprotScorer(next))
	}
	return nil
}
