package comm

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/bootstrap"
	"github.com/gccl/gccl/internal/commlink"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/regcache"
)

// The operation packages reach a communicator's engine, bootstrap and
// registration cache through package internal/commlink, not through
// exported methods.
func init() {
	commlink.Install(
		func(c any) (*engine.Engine, error) { return c.(*Comm).engine() },
		func(c any) *bootstrap.Net { return c.(*Comm).bootstrap() },
		func(c any) *regcache.Cache { return c.(*Comm).registrations() },
	)
}

// registrations is the communicator's registration cache; nil when c is
// nil, not ready or closed.
func (c *Comm) registrations() *regcache.Cache {
	if c == nil || c.Status() != nil {
		return nil
	}
	return c.regs
}

// engine returns the engine to launch operations on, or why there is none.
func (c *Comm) engine() (*engine.Engine, error) {
	if c == nil {
		return nil, gccl.Errorf(gccl.InvalidArgument, "comm", "nil communicator")
	}
	if err := c.Status(); err != nil {
		if gccl.Code(err) == gccl.InProgress {
			return nil, gccl.Errorf(gccl.InProgress, "comm", "communicator initialisation is still in progress; poll Status until it returns nil, then issue operations")
		}
		return nil, err
	}
	if c.state.Load() == stateFinalized {
		return nil, gccl.Errorf(gccl.InvalidUsage, "comm", "communicator %q (rank %d) was finalized; only Close is allowed", c.cfg.Name, c.rank)
	}
	e := c.eng
	if c.state.Load() == stateOpen && !e.Closed() {
		return e, nil
	}
	// An open communicator whose engine was aborted under it (a lost peer)
	// reports that cause, as every survivor's AsyncError does.
	if c.state.Load() == stateOpen && e.AsyncError() != nil {
		return nil, e.AsyncError()
	}
	return nil, gccl.Errorf(gccl.InvalidUsage, "comm", "communicator is closed or aborted; create a new one")
}

// bootstrap is the rank's bootstrap network; nil until the communicator is
// ready and after Close.
func (c *Comm) bootstrap() *bootstrap.Net {
	if c.Status() != nil {
		return nil
	}
	return c.boot
}
