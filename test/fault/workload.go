package fault

import (
	"math/rand/v2"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/group"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/p2p"
)

// Poison is the byte every output buffer holds before an operation.
const Poison = 0xA5

// Bufs is one rank's device buffers and stream for a fault scenario.
type Bufs struct {
	Dev        device.Device
	S          gccl.Stream
	Send, Recv uintptr
	N          int // bytes in each buffer
}

// NewBufs allocates send and recv buffers of n bytes on c's device, the
// send buffer holding random int32 data drawn from seed and the rank, the
// recv buffer poisoned.
func NewBufs(c *comm.Comm, n int, seed uint64) (b *Bufs, err error) {
	d := c.Device()
	if d == nil {
		return nil, gccl.Errorf(gccl.InvalidUsage, "comm", "communicator is not ready")
	}
	b = &Bufs{Dev: d, N: n}
	defer func() {
		if err != nil {
			b.Free()
		}
	}()
	if b.S, err = d.NewStream(); err != nil {
		return nil, err
	}
	if b.Send, err = d.Alloc(n); err != nil {
		return nil, err
	}
	if b.Recv, err = d.Alloc(n); err != nil {
		return nil, err
	}
	in := make([]byte, n)
	reduce.Fill(in, gccl.Int32, rand.New(rand.NewPCG(seed, uint64(c.Rank()))))
	if err = d.CopyIn(b.Send, in); err != nil {
		return nil, err
	}
	for i := range in {
		in[i] = Poison
	}
	return b, d.CopyIn(b.Recv, in)
}

// Free releases the buffers and the stream. Errors are ignored: the stream
// may hold the sticky error of the failed operation the test provoked.
func (b *Bufs) Free() {
	if b == nil || b.Dev == nil {
		return
	}
	if b.S != 0 {
		_ = b.Dev.DestroyStream(b.S)
	}
	if b.Send != 0 {
		_ = b.Dev.Free(b.Send)
	}
	if b.Recv != 0 {
		_ = b.Dev.Free(b.Recv)
	}
	*b = Bufs{}
}

// Workload launches one operation of a fault scenario on one rank; count
// int32 elements fit in each of the rank's buffers.
type Workload struct {
	Name   string
	Launch func(c *comm.Comm, b *Bufs, count int) error
}

// Workloads are the operations the fault scenarios cut in the middle.
var Workloads = []Workload{
	{"allreduce", func(c *comm.Comm, b *Bufs, count int) error {
		return coll.AllReduce(c, b.Send, b.Recv, count, gccl.Int32, gccl.Sum, b.S)
	}},
	{"sendrecv", func(c *comm.Comm, b *Bufs, count int) error {
		// A ring shift: send to the right, receive from the left.
		n, r := c.Count(), c.Rank()
		g := group.New()
		g.Send(c, b.Send, count, gccl.Int32, (r+1)%n, b.S)
		g.Recv(c, b.Recv, count, gccl.Int32, (r+n-1)%n, b.S)
		return g.End()
	}},
	{"group", func(c *comm.Comm, b *Bufs, count int) error {
		// A collective and point-to-point ops in one group.
		g := group.New()
		g.AllReduce(c, b.Send, b.Recv, count/2, gccl.Int32, gccl.Max, b.S)
		if c.Rank() == 0 {
			for p := 1; p < c.Count(); p++ {
				g.Send(c, b.Send, count/4, gccl.Int32, p, b.S)
			}
		} else {
			g.Recv(c, b.Recv+uintptr(2*count), count/4, gccl.Int32, 0, b.S)
		}
		return g.End()
	}},
	{"p2p", func(c *comm.Comm, b *Bufs, count int) error {
		// Every rank receives from the last rank, which sends to all.
		n, r := c.Count(), c.Rank()
		if r != n-1 {
			return p2p.Recv(c, b.Recv, count, gccl.Int32, n-1, b.S)
		}
		g := group.New()
		for p := range n - 1 {
			g.Send(c, b.Send, count, gccl.Int32, p, b.S)
		}
		return g.End()
	}},
}

// WorkloadNamed returns the workload called name.
func WorkloadNamed(name string) (Workload, error) {
	for _, w := range Workloads {
		if w.Name == name {
			return w, nil
		}
	}
	return Workload{}, gccl.Errorf(gccl.InvalidArgument, "workload", "unknown workload %q (allreduce, sendrecv, group, p2p)", name)
}

// PeerFailure reports whether err is what a survivor must see when a peer
// dies: gccl.ErrRemote or gccl.ErrTimeout.
func PeerFailure(err error) bool {
	c := gccl.Code(err)
	return err != nil && (c == gccl.RemoteError || c == gccl.TimeoutError)
}
