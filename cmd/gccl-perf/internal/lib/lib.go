package lib

import (
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/perf"
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
}

// Next and Prev are the peers of the send/recv ring.
func (c Call) Next() int { return (c.Rank + 1) % c.NRanks }
func (c Call) Prev() int { return (c.Rank + c.NRanks - 1) % c.NRanks }

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
