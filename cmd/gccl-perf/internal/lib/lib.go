package lib

import (
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/perf"
	"github.com/gccl/gccl/p2p"
)

// Call is one operation as every library runs it: the same buffers and
// arguments for gccl and for the baseline.
type Call struct {
	Op     perf.Op
	Send   uintptr
	Recv   uintptr
	Count  int // the operation's count argument (for blocked operations, per block)
	Type   gccl.DataType
	RedOp  gccl.RedOp
	Root   int
	Rank   int
	NRanks int
	Grid   p2p.Cart // halo: the grid of ranks
}

// Next and Prev are the peers of the send/recv ring.
func (c Call) Next() int { return (c.Rank + 1) % c.NRanks }
func (c Call) Prev() int { return (c.Rank + c.NRanks - 1) % c.NRanks }

// Halos are halo's faces and halos, one per side of the grid in
// p2p.HaloExchange's order: face i is Count elements at Send + i×Count,
// its halo Count elements at Recv + i×Count.
func (c Call) Halos() []p2p.Halo {
	n := uintptr(c.Count * c.Type.Size())
	hs := make([]p2p.Halo, 2*len(c.Grid.Dims))
	for i := range hs {
		hs[i] = p2p.Halo{Send: c.Send + uintptr(i)*n, Recv: c.Recv + uintptr(i)*n, Count: c.Count}
	}
	return hs
}

// Library is what gccl-perf measures on one rank: gccl itself or a
// baseline. A library also implements HostRunner (it runs on the host
// backend), StreamLauncher (it runs on GPU streams) or both; the run's
// clock times it.
type Library interface {
	Name() string
	// Supports returns nil when the library can run op with these settings,
	// else an error saying why not (the sweep then skips the library).
	Supports(op perf.Op, t gccl.DataType, redop gccl.RedOp, inplace bool) error
}

// HostRunner is a library that runs one operation to completion and times
// it on the host (gccl on the host backend, MPI).
type HostRunner interface {
	Run(c Call) (time.Duration, error)
}

// StreamLauncher is a library that enqueues one operation on the run's
// CUDA stream and returns without waiting (gccl on a GPU, NCCL). Launch is
// called with the device's context current on the calling OS thread.
type StreamLauncher interface {
	Launch(c Call) error
}

// Baseline is a library gccl is compared with in the same run (-baseline):
// MPI's own collectives, or NCCL.
type Baseline interface {
	Library
	Close() error
}

// Aborter is a baseline that can tear its communicator down without
// waiting for peers, after a failure.
type Aborter interface {
	Abort() error
}

// Env is what a library runs on, on one rank: gccl's communicator, its
// device and the run's stream.
type Env struct {
	Comm   *comm.Comm
	Device device.Device
	Stream gccl.Stream
}
