// Package commlink gives gccl's own packages what package comm keeps out
// of its public API: a communicator's engine, which coll, p2p and group
// launch on, its bootstrap network, which the benchmark and tests
// all-gather through, and its registration cache, which bufreg registers
// with. Package comm installs the accessors from an init
// function; a caller passes a *comm.Comm (this package cannot name the type:
// comm imports it).
package commlink

import (
	"github.com/gccl/gccl/internal/bootstrap"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/regcache"
)

var (
	engineOf func(c any) (*engine.Engine, error)
	bootOf   func(c any) *bootstrap.Net
	regsOf   func(c any) *regcache.Cache
)

// Install sets the accessors; package comm calls it once, at init.
func Install(engine func(c any) (*engine.Engine, error), boot func(c any) *bootstrap.Net, regs func(c any) *regcache.Cache) {
	engineOf, bootOf, regsOf = engine, boot, regs
}

// Engine returns the engine of c (a *comm.Comm, possibly nil) when c takes
// operations, else a *gccl.Error saying why not: nil, still initialising,
// finalized, closed, or aborted after a peer was lost.
func Engine(c any) (*engine.Engine, error) { return engineOf(c) }

// Bootstrap returns the bootstrap network of c (a *comm.Comm); nil until c
// is ready and after Close.
func Bootstrap(c any) *bootstrap.Net { return bootOf(c) }

// Regs returns the registration cache of c (a *comm.Comm, possibly nil);
// nil when c is nil, not ready or closed.
func Regs(c any) *regcache.Cache { return regsOf(c) }
