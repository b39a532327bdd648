package mpiboot

// MPI's own collectives on host buffers, for side-by-side comparison with
// gccl (gccl-perf -baseline mpi). They run on a private duplicate of
// MPI_COMM_WORLD, separate from mpiboot's bootstrap communicator, and map
// gccl's types and operators to MPI's in C, never by constant value.

/*
#include <stdint.h>
#include <stdlib.h>
#include <mpi.h>

enum { GCCL_T_INT8, GCCL_T_UINT8, GCCL_T_INT32, GCCL_T_UINT32, GCCL_T_INT64, GCCL_T_UINT64,
	GCCL_T_FLOAT, GCCL_T_DOUBLE };
enum { GCCL_OP_SUM, GCCL_OP_PROD, GCCL_OP_MAX, GCCL_OP_MIN };

static MPI_Datatype gccl_mpi_type(int t) {
	switch (t) {
	case GCCL_T_INT8: return MPI_INT8_T;
	case GCCL_T_UINT8: return MPI_UINT8_T;
	case GCCL_T_INT32: return MPI_INT32_T;
	case GCCL_T_UINT32: return MPI_UINT32_T;
	case GCCL_T_INT64: return MPI_INT64_T;
	case GCCL_T_UINT64: return MPI_UINT64_T;
	case GCCL_T_FLOAT: return MPI_FLOAT;
	default: return MPI_DOUBLE;
	}
}

static MPI_Op gccl_mpi_op(int o) {
	switch (o) {
	case GCCL_OP_PROD: return MPI_PROD;
	case GCCL_OP_MAX: return MPI_MAX;
	case GCCL_OP_MIN: return MPI_MIN;
	default: return MPI_SUM;
	}
}

// A zero send address means MPI_IN_PLACE.
static const void *gccl_send(uintptr_t p) { return p ? (const void *)p : MPI_IN_PLACE; }

static MPI_Comm *gccl_coll_new(void) { return (MPI_Comm *)malloc(sizeof(MPI_Comm)); }

static int gccl_coll_idup(MPI_Comm *c, MPI_Request *req) { return MPI_Comm_idup(MPI_COMM_WORLD, c, req); }

static int gccl_coll_ready(MPI_Comm *c) { return MPI_Comm_set_errhandler(*c, MPI_ERRORS_RETURN); }

static int gccl_coll_free(MPI_Comm *c) {
	int e = MPI_Comm_free(c);
	free(c);
	return e;
}

static int gccl_allreduce(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t, int o) {
	return MPI_Allreduce(gccl_send(s), (void *)r, n, gccl_mpi_type(t), gccl_mpi_op(o), *c);
}

static int gccl_allgather(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t) {
	MPI_Datatype dt = gccl_mpi_type(t);
	return MPI_Allgather(gccl_send(s), n, dt, (void *)r, n, dt, *c);
}

static int gccl_reduce_scatter_block(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t, int o) {
	return MPI_Reduce_scatter_block(gccl_send(s), (void *)r, n, gccl_mpi_type(t), gccl_mpi_op(o), *c);
}

static int gccl_bcast(MPI_Comm *c, uintptr_t b, int n, int t, int root) {
	return MPI_Bcast((void *)b, n, gccl_mpi_type(t), root, *c);
}

static int gccl_reduce(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t, int o, int root) {
	return MPI_Reduce(gccl_send(s), (void *)r, n, gccl_mpi_type(t), gccl_mpi_op(o), root, *c);
}

static int gccl_sendrecv(MPI_Comm *c, uintptr_t s, int sn, int dest, uintptr_t r, int rn, int src, int t) {
	MPI_Datatype dt = gccl_mpi_type(t);
	return MPI_Sendrecv((const void *)s, sn, dt, dest, 0, (void *)r, rn, dt, src, 0, *c, MPI_STATUS_IGNORE);
}

static int gccl_alltoall(MPI_Comm *c, uintptr_t s, uintptr_t r, int n, int t) {
	MPI_Datatype dt = gccl_mpi_type(t);
	return MPI_Alltoall((const void *)s, n, dt, (void *)r, n, dt, *c);
}
*/
import "C"

import (
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/gccl/gccl"
)

// Collectives runs MPI's collectives (MPI_Allreduce, MPI_Allgather,
// MPI_Reduce_scatter_block, MPI_Bcast, MPI_Reduce, MPI_Sendrecv,
// MPI_Alltoall) on host buffers given as addresses, over its own duplicate
// of MPI_COMM_WORLD. MPI has native types for int8 to uint64, float32 and
// float64 and native operators for sum, prod, max and min; the other types
// and avg get gccl.ErrInvalidArgument.
//
// Each call blocks in MPI; it is bounded by mpiboot's deadline (SetTimeout,
// else GCCL_TIMEOUT): past it the call returns gccl.ErrTimeout while MPI
// stays blocked, and the job should be aborted. Every call returns the time
// spent inside the MPI function itself, without the hand-over to the
// thread that runs it. As with any MPI collective, every process must make
// the same calls in the same order.
type Collectives struct {
	mu   sync.Mutex
	comm *C.MPI_Comm // C memory; nil once closed
	rank int
	size int
}

// NewCollectives duplicates MPI_COMM_WORLD for MPI's collectives. Every
// process of the job must call it, after Init or Join.
func NewCollectives() (*Collectives, error) {
	e, deadline, err := acquire()
	if err != nil {
		return nil, err
	}
	defer live.RUnlock()
	collMu.Lock()
	defer collMu.Unlock()
	c := &Collectives{comm: C.gccl_coll_new()}
	if c.comm == nil {
		return nil, gccl.Errorf(gccl.SystemError, "mpi", "out of memory for an MPI communicator handle")
	}
	r := &request{}
	if terr := e.do(func() { err = mpiError(C.gccl_coll_idup(c.comm, &r.req), "MPI_Comm_idup") }); terr != nil || err != nil {
		C.free(unsafe.Pointer(c.comm))
		return nil, firstErr(terr, err)
	}
	if err := wait(e, r, deadline, "MPI_Comm_idup"); err != nil {
		return nil, err // the handle stays allocated: MPI may still write it
	}
	if terr := e.do(func() { err = mpiError(C.gccl_coll_ready(c.comm), "MPI_Comm_set_errhandler") }); terr != nil || err != nil {
		return nil, firstErr(terr, err)
	}
	c.rank, c.size = World()
	return c, nil
}

// Close frees the communicator. It is safe on nil, twice, and after
// Finalize (which has freed it with MPI).
func (c *Collectives) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.comm == nil {
		return nil
	}
	e, deadline, err := acquire()
	if err != nil {
		c.comm = nil // MPI is finalised: nothing left to free
		return nil
	}
	defer live.RUnlock()
	p := c.comm
	c.comm = nil
	return firstErr(blocking(e, deadline, func() { err = mpiError(C.gccl_coll_free(p), "MPI_Comm_free") }), err)
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

func cType(t gccl.DataType) (C.int, error) {
	switch t {
	case gccl.Int8:
		return C.GCCL_T_INT8, nil
	case gccl.Uint8:
		return C.GCCL_T_UINT8, nil
	case gccl.Int32:
		return C.GCCL_T_INT32, nil
	case gccl.Uint32:
		return C.GCCL_T_UINT32, nil
	case gccl.Int64:
		return C.GCCL_T_INT64, nil
	case gccl.Uint64:
		return C.GCCL_T_UINT64, nil
	case gccl.Float32:
		return C.GCCL_T_FLOAT, nil
	case gccl.Float64:
		return C.GCCL_T_DOUBLE, nil
	}
	return 0, gccl.Errorf(gccl.InvalidArgument, "datatype", "MPI has no native type for %v; use int8..uint64, float32 or float64", t)
}

func cOp(op gccl.RedOp) (C.int, error) {
	switch op {
	case gccl.Sum:
		return C.GCCL_OP_SUM, nil
	case gccl.Prod:
		return C.GCCL_OP_PROD, nil
	case gccl.Max:
		return C.GCCL_OP_MAX, nil
	case gccl.Min:
		return C.GCCL_OP_MIN, nil
	}
	return 0, gccl.Errorf(gccl.InvalidArgument, "op", "MPI has no native operator for %v; use sum, prod, max or min", op)
}

// checkCount validates an element count for one MPI call (a C int).
func checkCount(name string, n int) error {
	if n < 0 || n > math.MaxInt32 {
		return gccl.Errorf(gccl.InvalidArgument, name, "count %d is out of range; one MPI call takes 0 to %d elements", n, math.MaxInt32)
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
	ct, co, err := c.reduceArgs(count, t, op)
	if err = firstErr(err, checkBuf("send", send, count), checkBuf("recv", recv, count)); err != nil {
		return 0, err
	}
	s := inPlace(send, recv)
	return c.run("MPI_Allreduce", func(m *C.MPI_Comm) C.int {
		return C.gccl_allreduce(m, C.uintptr_t(s), C.uintptr_t(recv), C.int(count), ct, co)
	})
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
	return c.run("MPI_Allgather", func(m *C.MPI_Comm) C.int {
		return C.gccl_allgather(m, C.uintptr_t(s), C.uintptr_t(recv), C.int(sendcount), ct)
	})
}

// ReduceScatterBlock is MPI_Reduce_scatter_block: send holds Size() ×
// recvcount elements, recv gets this rank's reduced block. With send ==
// recv it is in place in MPI's layout: the input is the whole of recv and
// the result lands at its start (NCCL's in-place result is at the rank's
// offset instead).
func (c *Collectives) ReduceScatterBlock(send, recv uintptr, recvcount int, t gccl.DataType, op gccl.RedOp) (time.Duration, error) {
	ct, co, err := c.reduceArgs(recvcount, t, op)
	if err = firstErr(err, checkBuf("send", send, recvcount), checkBuf("recv", recv, recvcount)); err != nil {
		return 0, err
	}
	s := inPlace(send, recv)
	return c.run("MPI_Reduce_scatter_block", func(m *C.MPI_Comm) C.int {
		return C.gccl_reduce_scatter_block(m, C.uintptr_t(s), C.uintptr_t(recv), C.int(recvcount), ct, co)
	})
}

// Bcast is MPI_Bcast of count elements of buf from root.
func (c *Collectives) Bcast(buf uintptr, count int, t gccl.DataType, root int) (time.Duration, error) {
	ct, err := c.args(count, t)
	if err = firstErr(err, checkBuf("buf", buf, count), c.checkRank("root", root)); err != nil {
		return 0, err
	}
	return c.run("MPI_Bcast", func(m *C.MPI_Comm) C.int {
		return C.gccl_bcast(m, C.uintptr_t(buf), C.int(count), ct, C.int(root))
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
	return c.run("MPI_Reduce", func(m *C.MPI_Comm) C.int {
		return C.gccl_reduce(m, C.uintptr_t(s), C.uintptr_t(recv), C.int(count), ct, co, C.int(root))
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
	return c.run("MPI_Sendrecv", func(m *C.MPI_Comm) C.int {
		return C.gccl_sendrecv(m, C.uintptr_t(send), C.int(sendcount), C.int(dest), C.uintptr_t(recv), C.int(recvcount), C.int(source), ct)
	})
}

// Alltoall is MPI_Alltoall: block j (count elements) of send goes to rank
// j, and block j of recv comes from rank j.
func (c *Collectives) Alltoall(send, recv uintptr, count int, t gccl.DataType) (time.Duration, error) {
	ct, err := c.args(count, t)
	if err = firstErr(err, checkBuf("send", send, count), checkBuf("recv", recv, count)); err != nil {
		return 0, err
	}
	return c.run("MPI_Alltoall", func(m *C.MPI_Comm) C.int {
		return C.gccl_alltoall(m, C.uintptr_t(send), C.uintptr_t(recv), C.int(count), ct)
	})
}

// inPlace returns 0 (MPI_IN_PLACE) when send is recv.
func inPlace(send, recv uintptr) uintptr {
	if send == recv {
		return 0
	}
	return send
}

func (c *Collectives) args(count int, t gccl.DataType) (C.int, error) {
	ct, err := cType(t)
	return ct, firstErr(err, checkCount("count", count))
}

func (c *Collectives) reduceArgs(count int, t gccl.DataType, op gccl.RedOp) (C.int, C.int, error) {
	ct, err := c.args(count, t)
	co, oerr := cOp(op)
	return ct, co, firstErr(err, oerr)
}

// run makes one blocking MPI call f on c's communicator under mpiboot's
// deadline and returns the time f spent in MPI. After a timeout the
// communicator is left to MPI (still in use) and c refuses later calls.
func (c *Collectives) run(call string, f func(*C.MPI_Comm) C.int) (time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.comm == nil {
		return 0, gccl.Errorf(gccl.InvalidUsage, "collectives", "closed, or broken by an earlier timeout; make new Collectives (or abort the job after a timeout)")
	}
	e, deadline, err := acquire()
	if err != nil {
		return 0, err
	}
	defer live.RUnlock()
	collMu.Lock()
	defer collMu.Unlock()
	var code C.int
	var took time.Duration
	m := c.comm
	terr := blocking(e, deadline, func() {
		t0 := time.Now()
		code = f(m)
		took = time.Since(t0)
	})
	if terr != nil {
		c.comm = nil
		return 0, terr
	}
	return took, mpiError(code, call)
}

// blocking runs f, which blocks in MPI, where MPI allows it: on the funnel
// thread, or (MPI_THREAD_MULTIPLE) on a goroutine of its own, so that the
// caller can give up at the deadline with gccl.ErrTimeout.
func blocking(e *executor, deadline time.Time, f func()) error {
	e.mu.Lock()
	direct := e.direct
	e.mu.Unlock()
	if !direct {
		return e.onThread(f, deadline)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return gccl.Errorf(gccl.TimeoutError, "mpi", "an MPI collective did not return before the deadline; a process of the job did not take part, abort the job")
	}
}
