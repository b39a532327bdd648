// Package reglink connects package comm and package bufreg, neither of
// which can import the other (comm imports the engine, which imports
// bufreg), without either exporting its internals. A communicator's
// registrations are a Cache that bufreg makes (New, installed by bufreg)
// and comm owns: comm makes one per communicator, hands it to its engine,
// and closes it in Close and Abort. bufreg finds the Cache of the
// *comm.Comm that Register was given with CacheOf (installed by comm).
package reglink

import (
	"context"

	"github.com/gccl/gccl/device"
)

// Net is a communicator's all-gather among its ranks (internal/bootstrap.Net).
type Net interface {
	AllGather(ctx context.Context, b []byte) ([][]byte, error)
}

// Owner is the communicator a Cache belongs to.
type Owner struct {
	Device       device.Device
	Rank, NRanks int
	Net          Net // registration through it is collective
}

// Cache is one communicator's registrations. It is the communicator as
// registration sees it (bufreg.Comm), which is what the engine is given.
type Cache interface {
	Device() device.Device
	Rank() int
	Count() int
	// Close releases every registration; their handles become
	// deregistered.
	Close() error
}

var (
	newCache func(Owner) Cache
	cacheOf  func(c any) (Cache, bool)
)

// InstallNew sets New; package bufreg calls it once, at init.
func InstallNew(f func(Owner) Cache) { newCache = f }

// InstallCacheOf sets CacheOf; package comm calls it once, at init.
func InstallCacheOf(f func(c any) (Cache, bool)) { cacheOf = f }

// New makes the registration cache of a communicator.
func New(o Owner) Cache { return newCache(o) }

// CacheOf returns the cache of c when c is a *comm.Comm: ok is true, and
// the cache is nil when c is nil, not ready or closed. ok is false when c
// is no *comm.Comm.
func CacheOf(c any) (cache Cache, ok bool) {
	if cacheOf == nil {
		return nil, false
	}
	return cacheOf(c)
}
