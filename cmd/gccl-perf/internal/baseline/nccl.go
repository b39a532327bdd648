package baseline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/arena"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/initcost"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/commlink"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/nccl"
	"github.com/gccl/gccl/internal/perf"
)

// openNCCL loads libnccl.so.2; tests replace it.
var openNCCL = nccl.Load

// ncclBaseline runs NCCL (libnccl.so.2, loaded at run time) on the same
// device buffers and stream as gccl; the run's clock times both alike
// (CUDA events on that stream, eagerly or through a CUDA graph).
type ncclBaseline struct {
	version int // NCCL_VERSION_CODE, for the type and operator checks
	comm    *nccl.Comm
	dev     *device.CUDADevice
	stream  gccl.Stream
	regs    map[uintptr]uintptr // registered base -> ncclCommRegister handle
	failed  bool                // an operation failed or timed out: Close aborts
	cost    initcost.Cost       // ncclCommInitRank's time and memory
}

func newNCCLBaseline(e lib.Env) (lib.Baseline, error) {
	if err := keepNCCLOffNVLS(); err != nil {
		return nil, err
	}
	if err := ncclBlocking(); err != nil {
		return nil, err
	}
	nl, err := openNCCL()
	if missing := (*nccl.NotFound)(nil); errors.As(err, &missing) {
		return nil, gccl.Errorf(gccl.SystemError, "baseline nccl",
			"%w; install NCCL 2.x or add its directory to LD_LIBRARY_PATH, or drop -baseline nccl", missing)
	}
	if err != nil {
		return nil, gccl.Errorf(gccl.SystemError, "baseline nccl", "loading libnccl.so.2: %w", err)
	}
	dev, ok := e.Device.(*device.CUDADevice)
	if !ok {
		return nil, gccl.Errorf(gccl.InvalidUsage, "baseline nccl",
			"NCCL runs on GPUs and this run's device is %v; use -baseline mpi on the host backend", e.Device.Kind())
	}
	timeout := e.Comm.Config().Timeout
	if timeout <= 0 {
		timeout = env.Get().Timeout
	}
	var id nccl.UniqueID
	if e.Comm.Rank() == 0 {
		err = dev.Do(func() (err error) { id, err = nl.UniqueID(); return err })
	}
	if id, err = shareNCCLID(e.Comm, id, err, timeout); err != nil {
		return nil, fmt.Errorf("baseline nccl: %w", err)
	}
	b := &ncclBaseline{version: nl.Version(), dev: dev, stream: e.Stream, regs: map[uintptr]uintptr{}}
	b.cost, err = initcost.Measure(initcost.MeterOf(dev), func() error {
		return dev.Do(func() (err error) {
			b.comm, err = nl.InitRank(e.Comm.Count(), id, e.Comm.Rank(), timeout)
			return err
		})
	})
	if err != nil {
		if b.comm != nil { // the init worked, measuring it did not
			err = errors.Join(err, dev.Do(b.comm.Abort))
		}
		return nil, fmt.Errorf("baseline nccl: NCCL %s on GPU %d: %w", nccl.VersionString(b.version), dev.Ordinal(), err)
	}
	return b, nil
}

// InitCost is the wall time and device memory of ncclCommInitRank on this
// rank (initcost.Measure: every rank starts it right after the unique ID's
// all-gather, and the context already exists).
func (b *ncclBaseline) InitCost() initcost.Cost { return b.cost }

// keepNCCLOffNVLS sets NCCL_NVLS_ENABLE=0 for the NCCL in this process
// unless the user enabled NVLS explicitly (GCCL_NVLS_ENABLE or
// NCCL_NVLS_ENABLE exactly 1): NCCL would otherwise create NVLink
// multicast objects on NVSwitch machines, which gccl never does unasked.
// NCCL reads the variable when it initialises, after this.
func keepNCCLOffNVLS() error {
	if env.Get().NVLSEnable {
		return nil
	}
	if err := os.Setenv("NCCL_NVLS_ENABLE", "0"); err != nil {
		return gccl.Errorf(gccl.SystemError, "baseline nccl", "setting NCCL_NVLS_ENABLE=0: %w", err)
	}
	return nil
}

// ncclBlocking makes the baseline a blocking NCCL communicator
// (NCCL_COMM_BLOCKING=1, which overrides the nonblocking config InitRank
// asks for) unless the user chose otherwise. A nonblocking communicator
// hands every launch to a helper thread and answers ncclInProgress, and
// polling for that costs NCCL hundreds of microseconds per operation, which
// is not NCCL's speed: nccl-tests measures blocking communicators too. The
// NCCL init then has no deadline of its own, but it starts only after every
// rank has proved alive by sharing the unique ID.
func ncclBlocking() error {
	if _, set := os.LookupEnv("NCCL_COMM_BLOCKING"); set {
		return nil
	}
	if err := os.Setenv("NCCL_COMM_BLOCKING", "1"); err != nil {
		return gccl.Errorf(gccl.SystemError, "baseline nccl", "setting NCCL_COMM_BLOCKING=1: %w", err)
	}
	return nil
}

// shareNCCLID gives every rank rank 0's NCCL unique ID over the gccl
// communicator's bootstrap (which works under mpirun and with -np alike).
// Rank 0 sends a flag byte first, so that its failure to make the ID
// reaches the other ranks instead of leaving them waiting.
func shareNCCLID(c *comm.Comm, id nccl.UniqueID, made error, timeout time.Duration) (nccl.UniqueID, error) {
	boot := commlink.Bootstrap(c)
	if boot == nil {
		return id, gccl.Errorf(gccl.InvalidUsage, "comm", "the gccl communicator is not ready; cannot share the NCCL unique ID")
	}
	msg := append([]byte{1}, id[:]...)
	if made != nil {
		msg[0] = 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	all, err := boot.AllGather(ctx, msg)
	switch {
	case made != nil:
		return id, fmt.Errorf("making the NCCL unique ID: %w", made)
	case err != nil:
		return id, fmt.Errorf("sharing the NCCL unique ID: %w", err)
	case len(all) == 0 || len(all[0]) != len(msg):
		return id, gccl.Errorf(gccl.InternalError, "unique id", "rank 0 sent a malformed NCCL unique ID")
	case all[0][0] == 0:
		return id, gccl.Errorf(gccl.RemoteError, "unique id", "rank 0 could not make the NCCL unique ID (see its error output)")
	}
	copy(id[:], all[0][1:])
	return id, nil
}

func (b *ncclBaseline) Name() string { return "nccl" }

func (b *ncclBaseline) Supports(op perf.Op, t gccl.DataType, redop gccl.RedOp, inplace bool) error {
	if _, err := nccl.DataType(t, b.version); err != nil {
		return fmt.Errorf("baseline nccl: %w", err)
	}
	if op.Reducing() {
		if _, err := nccl.RedOp(redop, b.version); err != nil {
			return fmt.Errorf("baseline nccl: %w", err)
		}
	}
	if inplace && (op == perf.SendRecv || op == perf.AllToAll || op == perf.Halo) {
		return fmt.Errorf("baseline nccl: %s has no in-place form", op)
	}
	return nil
}

// Launch enqueues c on the stream (the device's context is current: the
// clocks call it inside CUDADevice.Do).
func (b *ncclBaseline) Launch(c lib.Call) error {
	ops, err := ncclOpsOf(c)
	if err != nil {
		return err
	}
	if err := b.comm.Launch(b.stream, ops...); err != nil {
		b.failed = true
		return fmt.Errorf("nccl %s: %w", c.Op, err)
	}
	return nil
}

// ncclOpsOf turns a gccl-perf call into NCCL operations: one collective,
// or the send/recv pairs nccl-tests uses for sendrecv and alltoall.
func ncclOpsOf(c lib.Call) ([]nccl.Op, error) {
	o := nccl.Op{Send: c.Send, Recv: c.Recv, Count: c.Count, Type: c.Type, Op: c.RedOp, Root: c.Root}
	switch c.Op {
	case perf.AllReduce:
		o.Kind = nccl.AllReduce
	case perf.AllGather:
		o.Kind = nccl.AllGather
	case perf.ReduceScatter:
		o.Kind = nccl.ReduceScatter
	case perf.Broadcast:
		o.Kind = nccl.Broadcast
	case perf.Reduce:
		o.Kind = nccl.Reduce
	case perf.SendRecv:
		return []nccl.Op{
			{Kind: nccl.Send, Send: c.Send, Count: c.Count, Type: c.Type, Peer: c.Next()},
			{Kind: nccl.Recv, Recv: c.Recv, Count: c.Count, Type: c.Type, Peer: c.Prev()},
		}, nil
	case perf.AllToAll:
		block := uintptr(c.Count * c.Type.Size())
		ops := make([]nccl.Op, 0, 2*c.NRanks)
		for p := range c.NRanks {
			at := uintptr(p) * block
			ops = append(ops,
				nccl.Op{Kind: nccl.Send, Send: c.Send + at, Count: c.Count, Type: c.Type, Peer: p},
				nccl.Op{Kind: nccl.Recv, Recv: c.Recv + at, Count: c.Count, Type: c.Type, Peer: p})
		}
		return ops, nil
	case perf.Halo:
		return ncclHalo(c), nil
	default:
		return nil, gccl.Errorf(gccl.InvalidArgument, "op", "unknown operation %q", c.Op)
	}
	return []nccl.Op{o}, nil
}

// ncclHalo is halo as an NCCL code writes it: one group of ncclSend and
// ncclRecv per side, in p2p.HaloExchange's order (send face i to side i,
// receive halo i^1 from the opposite side), so that the k-th send to a peer
// meets the peer's k-th receive from this rank even when one peer is the
// neighbour on both sides.
func ncclHalo(c lib.Call) []nccl.Op {
	nb, hs := c.Grid.Neighbors(c.Rank), c.Halos()
	ops := make([]nccl.Op, 0, 2*len(hs))
	for i, out := range hs {
		if nb[i] >= 0 {
			ops = append(ops, nccl.Op{Kind: nccl.Send, Send: out.Send, Count: out.Count, Type: c.Type, Peer: nb[i]})
		}
		if in := hs[i^1]; nb[i^1] >= 0 {
			ops = append(ops, nccl.Op{Kind: nccl.Recv, Recv: in.Recv, Count: in.Count, Type: c.Type, Peer: nb[i^1]})
		}
	}
	return ops
}

var _ arena.Registrar = (*ncclBaseline)(nil)

// Register registers size bytes at p with the NCCL communicator.
func (b *ncclBaseline) Register(p uintptr, size int) error {
	if _, dup := b.regs[p]; dup {
		return gccl.Errorf(gccl.InvalidUsage, "p", "%#x is already registered with NCCL", p)
	}
	var h uintptr
	err := b.dev.Do(func() (err error) { h, err = b.comm.Register(p, size); return err })
	if err != nil {
		return fmt.Errorf("baseline nccl: registering %d bytes at %#x: %w", size, p, err)
	}
	b.regs[p] = h
	return nil
}

// Deregister undoes Register; call it before the memory is freed.
func (b *ncclBaseline) Deregister(p uintptr) error {
	h, ok := b.regs[p]
	if !ok {
		return gccl.Errorf(gccl.InvalidArgument, "p", "%#x is not registered with NCCL", p)
	}
	delete(b.regs, p)
	return b.dev.Do(func() error { return b.comm.Deregister(h) })
}

// Close deregisters what is left and destroys the communicator (aborting
// it after a failure, so that no rank waits for a dead peer).
func (b *ncclBaseline) Close() error {
	shut := b.comm.Close
	if b.failed {
		shut = b.comm.Abort
	}
	return b.shutdown(shut)
}

// Abort deregisters what is left and aborts the communicator.
func (b *ncclBaseline) Abort() error { return b.shutdown(b.comm.Abort) }

func (b *ncclBaseline) shutdown(shut func() error) error {
	var errs []error
	for p := range b.regs {
		errs = append(errs, b.Deregister(p))
	}
	return errors.Join(append(errs, b.dev.Do(shut))...)
}
