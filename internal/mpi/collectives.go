package mpi

// MPI's own collectives on host buffers, for side-by-side comparison with
// gccl (gccl-perf -baseline mpi). They run on a private duplicate of
// MPI_COMM_WORLD, separate from mpiboot's communicators, and map gccl's
// types and operators to MPI's in C, never by constant value.

import (
	"slices"
	"sync"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/mpi/funnel"
)

// mpiTypes and mpiOps are the types and operators MPI has natively, in the
// order of the C side's enums (collectives_cgo.go): an index here is a
// number there.
var (
	mpiTypes = [...]gccl.DataType{gccl.Int8, gccl.Uint8, gccl.Int32, gccl.Uint32, gccl.Int64, gccl.Uint64, gccl.Float32, gccl.Float64}
	mpiOps   = [...]gccl.RedOp{gccl.Sum, gccl.Prod, gccl.Max, gccl.Min}
)

// Collectives runs MPI's collectives (MPI_Allreduce, MPI_Allgather,
// MPI_Reduce_scatter_block, MPI_Bcast, MPI_Reduce, MPI_Sendrecv,
// MPI_Alltoall) and a halo step (Halo) on host buffers given as addresses, over its own duplicate
// of MPI_COMM_WORLD. MPI has native types for int8 to uint64, float32 and
// float64 and native operators for sum, prod, max and min; the other types
// and avg get gccl.ErrInvalidArgument.
//
// Each call blocks in MPI; it is bounded by the deadline (SetTimeout, else
// GCCL_TIMEOUT): past it the call returns gccl.ErrTimeout while MPI stays
// blocked, and the job should be aborted. Every call returns the time spent
// inside the MPI function itself, without the hand-over to the thread that
// runs it. As with any MPI collective, every process must make the same
// calls in the same order.
type Collectives struct {
	mu   sync.Mutex // guards comm
	comm *Comm      // nil once closed, or left to MPI after a timeout
	rank int
	size int
}

// NewCollectives duplicates MPI_COMM_WORLD for MPI's collectives. Every
// process of the job must call it, after Init or Join. Finalize does not
// free the duplicate: Close does, and MPI_Finalize cleans up what is left.
func NewCollectives() (*Collectives, error) {
	e, deadline, err := acquire()
	if err != nil {
		return nil, err
	}
	defer live.RUnlock()
	collMu.Lock()
	defer collMu.Unlock()
	m, err := dup(e, FromWorld, 0, deadline)
	if err != nil {
		return nil, err
	}
	return &Collectives{comm: m, rank: m.rank, size: m.size}, nil
}

// Close frees the communicator. It is safe on nil, twice, and after
// Finalize (MPI_Finalize has freed it).
func (c *Collectives) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.comm
	c.comm = nil
	return m.Free()
}

// Rank and Size are this process's rank and the number of processes.
func (c *Collectives) Rank() int { return c.rank }

// Size is the number of processes of the communicator.
func (c *Collectives) Size() int { return c.size }

// MPIType reports whether MPI has a native type for t (an error naming the
// type when not).
func MPIType(t gccl.DataType) error {
	_, err := cType(t)
	return err
}

// MPIOp reports whether MPI has a native operator for op.
func MPIOp(op gccl.RedOp) error {
	_, err := cOp(op)
	return err
}

func cType(t gccl.DataType) (int, error) {
	if i := slices.Index(mpiTypes[:], t); i >= 0 {
		return i, nil
	}
	return 0, gccl.Errorf(gccl.InvalidArgument, "datatype", "MPI has no native type for %v; use int8..uint64, float32 or float64", t)
}

func cOp(op gccl.RedOp) (int, error) {
	if i := slices.Index(mpiOps[:], op); i >= 0 {
		return i, nil
	}
	return 0, gccl.Errorf(gccl.InvalidArgument, "op", "MPI has no native operator for %v; use sum, prod, max or min", op)
}

// checkCount validates an element count for one MPI call (a C int).
func checkCount(name string, n int) error {
	if n < 0 || n > MaxCount {
		return gccl.Errorf(gccl.InvalidArgument, name, "count %d is out of range; one MPI call takes 0 to %d elements", n, MaxCount)
	}
	return nil
}

// checkBuf rejects a nil buffer for a non-empty transfer.
func checkBuf(name string, p uintptr, n int) error {
	if p == 0 && n > 0 {
		return gccl.Errorf(gccl.InvalidArgument, name, "nil buffer for %d elements; pass host memory", n)
	}
	return nil
}

// checkRank validates a root or peer rank.
func (c *Collectives) checkRank(name string, r int) error {
	if r < 0 || r >= c.size {
		return gccl.Errorf(gccl.InvalidArgument, name, "rank %d is out of range; it must be in [0, %d)", r, c.size)
	}
	return nil
}

// Allreduce is MPI_Allreduce of count elements; send == recv is in place.
func (c *Collectives) Allreduce(send, recv uintptr, count int, t gccl.DataType, op gccl.RedOp) (time.Duration, error) {
	return c.reduceEach(cAllreduce, send, recv, count, t, op)
}

// Allgather is MPI_Allgather of sendcount elements from every process into
// recv (Size() × sendcount elements, in rank order). It is in place, as in
// NCCL, when send is this rank's block of recv.
func (c *Collectives) Allgather(send, recv uintptr, sendcount int, t gccl.DataType) (time.Duration, error) {
	ct, err := c.args(sendcount, t)
	if err = firstErr(err, checkBuf("send", send, sendcount), checkBuf("recv", recv, sendcount)); err != nil {
		return 0, err
	}
	s := send
	if send == recv+uintptr(c.rank*sendcount*t.Size()) {
		s = 0
	}
	return c.run(func(m handle) error {
		return cAllgather(m, s, recv, sendcount, ct)
	})
}

// ReduceScatterBlock is MPI_Reduce_scatter_block: send holds Size() ×
// recvcount elements, recv gets this rank's reduced block. With send ==
// recv it is in place in MPI's layout: the input is the whole of recv and
// the result lands at its start (NCCL's in-place result is at the rank's
// offset instead).
func (c *Collectives) ReduceScatterBlock(send, recv uintptr, recvcount int, t gccl.DataType, op gccl.RedOp) (time.Duration, error) {
	return c.reduceEach(cReduceScatterBlock, send, recv, recvcount, t, op)
}

// reduceEach runs f, the C call of MPI_Allreduce or MPI_Reduce_scatter_block
// (every rank gets count reduced elements), in place when send == recv.
func (c *Collectives) reduceEach(f func(m handle, s, r uintptr, n, t, o int) error, send, recv uintptr, count int, t gccl.DataType, op gccl.RedOp) (time.Duration, error) {
	ct, co, err := c.reduceArgs(count, t, op)
	if err = firstErr(err, checkBuf("send", send, count), checkBuf("recv", recv, count)); err != nil {
		return 0, err
	}
	s := inPlace(send, recv)
	return c.run(func(m handle) error { return f(m, s, recv, count, ct, co) })
}

// Bcast is MPI_Bcast of count elements of buf from root.
func (c *Collectives) Bcast(buf uintptr, count int, t gccl.DataType, root int) (time.Duration, error) {
	ct, err := c.args(count, t)
	if err = firstErr(err, checkBuf("buf", buf, count), c.checkRank("root", root)); err != nil {
		return 0, err
	}
	return c.run(func(m handle) error {
		return cBcast(m, buf, count, ct, root)
	})
}

// Reduce is MPI_Reduce of count elements to root; recv matters only at the
// root, where send == recv is in place.
func (c *Collectives) Reduce(send, recv uintptr, count int, t gccl.DataType, op gccl.RedOp, root int) (time.Duration, error) {
	ct, co, err := c.reduceArgs(count, t, op)
	if err = firstErr(err, checkBuf("send", send, count), c.checkRank("root", root)); err == nil && c.rank == root {
		err = checkBuf("recv", recv, count)
	}
	if err != nil {
		return 0, err
	}
	s := send
	if c.rank == root {
		s = inPlace(send, recv)
	}
	return c.run(func(m handle) error {
		return cReduce(m, s, recv, count, ct, co, root)
	})
}

// Sendrecv is MPI_Sendrecv: sendcount elements of send to dest while
// receiving recvcount elements into recv from source.
func (c *Collectives) Sendrecv(send uintptr, sendcount, dest int, recv uintptr, recvcount, source int, t gccl.DataType) (time.Duration, error) {
	ct, err := c.args(sendcount, t)
	err = firstErr(err, checkCount("recvcount", recvcount), checkBuf("send", send, sendcount),
		checkBuf("recv", recv, recvcount), c.checkRank("dest", dest), c.checkRank("source", source))
	if err != nil {
		return 0, err
	}
	return c.run(func(m handle) error {
		return cSendrecv(m, send, sendcount, dest, recv, recvcount, source, ct)
	})
}

// Alltoall is MPI_Alltoall: block j (count elements) of send goes to rank
// j, and block j of recv comes from rank j.
func (c *Collectives) Alltoall(send, recv uintptr, count int, t gccl.DataType) (time.Duration, error) {
	ct, err := c.args(count, t)
	if err = firstErr(err, checkBuf("send", send, count), checkBuf("recv", recv, count)); err != nil {
		return 0, err
	}
	return c.run(func(m handle) error {
		return cAlltoall(m, send, recv, count, ct)
	})
}

// inPlace returns 0 (MPI_IN_PLACE) when send is recv.
func inPlace(send, recv uintptr) uintptr {
	if send == recv {
		return 0
	}
	return send
}

func (c *Collectives) args(count int, t gccl.DataType) (int, error) {
	ct, err := cType(t)
	return ct, firstErr(err, checkCount("count", count))
}

func (c *Collectives) reduceArgs(count int, t gccl.DataType, op gccl.RedOp) (int, int, error) {
	ct, err := c.args(count, t)
	co, oerr := cOp(op)
	return ct, co, firstErr(err, oerr)
}

// run makes one blocking MPI call f on c's communicator under the deadline
// and returns the time f spent in MPI. After a timeout the communicator is
// left to MPI (still in use) and c refuses later calls.
func (c *Collectives) run(f func(handle) error) (time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.comm == nil {
		return 0, gccl.Errorf(gccl.InvalidUsage, "collectives", "closed, or broken by an earlier timeout; make new Collectives (or abort the job after a timeout)")
	}
	var took time.Duration
	var callErr error
	timedOut := false
	err := c.comm.use(func(e *funnel.Executor, deadline time.Time) error {
		collMu.Lock()
		defer collMu.Unlock()
		h := c.comm.h
		terr := e.Blocking(deadline, func() {
			t0 := time.Now()
			callErr = f(h)
			took = time.Since(t0)
		})
		timedOut = terr != nil
		return terr
	})
	if timedOut {
		c.comm = nil
	}
	if err != nil {
		return 0, err // after a timeout, took and callErr stay MPI's to write
	}
	return took, callErr
}
