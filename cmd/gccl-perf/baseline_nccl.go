package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/perf"
)

func init() { baselines["nccl"] = newNCCLBaseline }

// openNCCL loads libnccl.so.2; tests replace it.
var openNCCL = cuda.LoadNCCL

// ncclBaseline runs NCCL (libnccl.so.2, loaded at run time) on the same
// device buffers and stream as gccl. Each operation is timed by CUDA events
// recorded on the stream around it, so its time is the GPU's.
type ncclBaseline struct {
	version int // NCCL_VERSION_CODE, for the type and operator checks
	comm    *cuda.NCCLComm
	dev     *device.CUDADevice
	timer   *eventTimer
	regs    map[uintptr]uintptr // registered base -> ncclCommRegister handle
	failed  bool                // an operation failed or timed out: Close aborts
}

func newNCCLBaseline(e baselineEnv) (baseline, error) {
	if err := keepNCCLOffNVLS(); err != nil {
		return nil, err
	}
	lib, err := openNCCL()
	if missing := (*cuda.NCCLNotFound)(nil); errors.As(err, &missing) {
		return nil, gccl.Errorf(gccl.SystemError, "baseline nccl",
			"%w; install NCCL 2.x or add its directory to LD_LIBRARY_PATH, or drop -baseline nccl", missing)
	}
	if err != nil {
		return nil, gccl.Errorf(gccl.SystemError, "baseline nccl", "loading libnccl.so.2: %w", err)
	}
	dev, ok := e.device.(*device.CUDADevice)
	if !ok {
		return nil, gccl.Errorf(gccl.InvalidUsage, "baseline nccl",
			"NCCL runs on GPUs and this run's device is %v; use -baseline mpi on the host backend", e.device.Kind())
	}
	timeout := e.comm.Config().Timeout
	if timeout <= 0 {
		timeout = env.Get().Timeout
	}
	var id cuda.NCCLUniqueID
	if e.comm.Rank() == 0 {
		err = dev.Do(func() (err error) { id, err = lib.UniqueID(); return err })
	}
	if id, err = shareNCCLID(e.comm, id, err, timeout); err != nil {
		return nil, fmt.Errorf("baseline nccl: %w", err)
	}
	b := &ncclBaseline{version: lib.Version(), dev: dev, regs: map[uintptr]uintptr{}}
	err = dev.Do(func() (err error) {
		b.comm, err = lib.InitRank(e.comm.Count(), id, e.comm.Rank(), timeout)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("baseline nccl: NCCL %s on GPU %d: %w", cuda.NCCLVersion(b.version), dev.Ordinal(), err)
	}
	if b.timer, err = newEventTimer(dev, e.stream, timeout); err != nil {
		_ = dev.Do(b.comm.Abort)
		return nil, fmt.Errorf("baseline nccl: %w", err)
	}
	return b, nil
}

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

// shareNCCLID gives every rank rank 0's NCCL unique ID over the gccl
// communicator's bootstrap (which works under mpirun and with -np alike).
// Rank 0 sends a flag byte first, so that its failure to make the ID
// reaches the other ranks instead of leaving them waiting.
func shareNCCLID(c *comm.Comm, id cuda.NCCLUniqueID, made error, timeout time.Duration) (cuda.NCCLUniqueID, error) {
	boot := c.Bootstrap()
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
	if _, err := cuda.NCCLDataType(t, b.version); err != nil {
		return fmt.Errorf("baseline nccl: %w", err)
	}
	if reducing(op) {
		if _, err := cuda.NCCLRedOp(redop, b.version); err != nil {
			return fmt.Errorf("baseline nccl: %w", err)
		}
	}
	if inplace && (op == perf.SendRecv || op == perf.AllToAll) {
		return fmt.Errorf("baseline nccl: %s has no in-place form", op)
	}
	return nil
}

// Run launches c on the stream between two events and returns the time
// between them.
func (b *ncclBaseline) Run(c call) (time.Duration, error) {
	ops, err := ncclOpsOf(c)
	if err != nil {
		return 0, err
	}
	d, err := b.timer.time(func() error { return b.comm.Launch(b.timer.stream, ops...) })
	if err != nil {
		b.failed = true
		return 0, fmt.Errorf("nccl %s: %w", c.Op, err)
	}
	return d, nil
}

// ncclOpsOf turns a gccl-perf call into NCCL operations: one collective,
// or the send/recv pairs nccl-tests uses for sendrecv and alltoall.
func ncclOpsOf(c call) ([]cuda.NCCLOp, error) {
	o := cuda.NCCLOp{Send: c.Send, Recv: c.Recv, Count: c.Count, Type: c.Type, Op: c.RedOp, Root: c.Root}
	switch c.Op {
	case perf.AllReduce:
		o.Kind = cuda.NCCLAllReduce
	case perf.AllGather:
		o.Kind = cuda.NCCLAllGather
	case perf.ReduceScatter:
		o.Kind = cuda.NCCLReduceScatter
	case perf.Broadcast:
		o.Kind = cuda.NCCLBroadcast
	case perf.Reduce:
		o.Kind = cuda.NCCLReduce
	case perf.SendRecv:
		return []cuda.NCCLOp{
			{Kind: cuda.NCCLSend, Send: c.Send, Count: c.Count, Type: c.Type, Peer: c.next()},
			{Kind: cuda.NCCLRecv, Recv: c.Recv, Count: c.Count, Type: c.Type, Peer: c.prev()},
		}, nil
	case perf.AllToAll:
		block := uintptr(c.Count * c.Type.Size())
		ops := make([]cuda.NCCLOp, 0, 2*c.NRanks)
		for p := range c.NRanks {
			at := uintptr(p) * block
			ops = append(ops,
				cuda.NCCLOp{Kind: cuda.NCCLSend, Send: c.Send + at, Count: c.Count, Type: c.Type, Peer: p},
				cuda.NCCLOp{Kind: cuda.NCCLRecv, Recv: c.Recv + at, Count: c.Count, Type: c.Type, Peer: p})
		}
		return ops, nil
	default:
		return nil, gccl.Errorf(gccl.InvalidArgument, "op", "unknown operation %q", c.Op)
	}
	return []cuda.NCCLOp{o}, nil
}

// registrar is a baseline that can register the sweep's memory with its
// library (NCCL: ncclCommRegister) for zero-copy runs: the sweep registers
// each allocation after Alloc and deregisters it before Free.
type registrar interface {
	Register(p uintptr, size int) error
	Deregister(p uintptr) error
}

var _ registrar = (*ncclBaseline)(nil)

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

// Close deregisters what is left, destroys the events and the communicator
// (aborting it after a failure, so that no rank waits for a dead peer).
func (b *ncclBaseline) Close() error {
	var errs []error
	for p := range b.regs {
		errs = append(errs, b.Deregister(p))
	}
	errs = append(errs, b.timer.Close())
	shut := b.comm.Close
	if b.failed {
		shut = b.comm.Abort
	}
	errs = append(errs, b.dev.Do(shut))
	return errors.Join(errs...)
}

// eventTimer times work on a GPU stream with two CUDA events recorded around
// it: the time is the GPU's, free of the host's polling. (gccl's own GPU
// runs can use it too, so that both libraries are timed alike.)
type eventTimer struct {
	dev        *device.CUDADevice
	drv        cuda.Driver
	stream     cuda.Stream
	start, end cuda.Event
	timeout    time.Duration
}

func newEventTimer(dev *device.CUDADevice, s gccl.Stream, timeout time.Duration) (*eventTimer, error) {
	t := &eventTimer{dev: dev, drv: dev.Driver(), stream: cuda.Stream(s), timeout: timeout}
	err := dev.Do(func() (err error) {
		if t.start, err = t.drv.EventCreate(cuda.EventDefault); err != nil {
			return err
		}
		if t.end, err = t.drv.EventCreate(cuda.EventDefault); err != nil {
			_ = t.drv.EventDestroy(t.start)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("creating the timing events: %w", err)
	}
	return t, nil
}

// time records the start event, calls launch (which enqueues work on the
// stream), records the end event, waits for it (at most the timeout) and
// returns the time between the events.
func (t *eventTimer) time(launch func() error) (time.Duration, error) {
	var ms float32
	err := t.dev.Do(func() (err error) {
		if err = t.drv.EventRecord(t.start, t.stream); err != nil {
			return err
		}
		if err = launch(); err != nil {
			return err
		}
		if err = t.drv.EventRecord(t.end, t.stream); err != nil {
			return err
		}
		if err = t.wait(); err != nil {
			return err
		}
		ms, err = t.drv.EventElapsedTime(t.start, t.end)
		return err
	})
	return time.Duration(float64(ms) * float64(time.Millisecond)), err
}

// wait polls the end event: a short spin, then sleeps from 1µs to 1ms.
func (t *eventTimer) wait() error {
	deadline := time.Now().Add(t.timeout)
	for i, sleep := 0, time.Microsecond; ; i++ {
		done, err := t.drv.EventQuery(t.end)
		if err != nil || done {
			return err
		}
		if time.Now().After(deadline) {
			return gccl.Errorf(gccl.TimeoutError, "stream", "GPU %d: the operation is not done after %v; "+
				"a rank may have failed (raise -timeout or GCCL_TIMEOUT if it is just long)", t.dev.Ordinal(), t.timeout)
		}
		if i >= 1000 {
			time.Sleep(sleep)
			sleep = min(2*sleep, time.Millisecond)
		}
	}
}

// Close destroys the events; it is safe on nil.
func (t *eventTimer) Close() error {
	if t == nil {
		return nil
	}
	return t.dev.Do(func() error {
		return errors.Join(t.drv.EventDestroy(t.start), t.drv.EventDestroy(t.end))
	})
}
