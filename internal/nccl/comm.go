package nccl

import (
	"sync"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wait"
)

// binding is the raw NCCL C API behind NCCL: the dlopen'd library
// (nccl.go) or a recording fake in tests. Handles and buffers are uintptr.
type binding interface {
	version() (int, Result)
	uniqueID(id *UniqueID) Result
	// initRank uses ncclCommInitRankConfig with blocking set as given when
	// cfg is true, else ncclCommInitRank.
	initRank(nranks, rank int, id *UniqueID, cfg *config) (uintptr, Result)
	destroy(comm uintptr) Result
	abort(comm uintptr) Result
	asyncError(comm uintptr) (state, r Result)
	launch(ops []packed, grouped bool) (issued int, r Result)
	register(comm, p uintptr, size int) (uintptr, Result)
	deregister(comm, h uintptr) Result
	memAlloc(size int) (uintptr, Result)
	memFree(p uintptr) Result
	has(sym string) bool
	errorString(r Result) string
	lastError(comm uintptr) string
}

// config is the part of ncclConfig_t the baseline sets.
type config struct {
	blocking bool
}

// Library is a loaded NCCL library. Its methods, like NCCL's C functions, act
// on the CUDA device current on the calling OS thread: callers pin their
// goroutine with runtime.LockOSThread and make the device's context current
// (device.CUDADevice.Do does both).
type Library struct {
	api     binding
	version int
}

func newLibrary(api binding) (*Library, error) {
	v, r := api.version()
	if r != Success {
		return nil, callError("ncclGetVersion", r, api.errorString(r), "", 0)
	}
	return &Library{api: api, version: v}, nil
}

// Version is the library's NCCL_VERSION_CODE (22805 for 2.28.5).
func (n *Library) Version() int { return n.version }

func (n *Library) check(fn string, comm uintptr, r Result) error {
	if r == Success {
		return nil
	}
	var last string
	if comm != 0 {
		last = n.api.lastError(comm)
	}
	return callError(fn, r, n.api.errorString(r), last, n.version)
}

// UniqueID makes a new ncclUniqueId (on one rank; share it with the others).
func (n *Library) UniqueID() (UniqueID, error) {
	var id UniqueID
	return id, n.check("ncclGetUniqueId", 0, n.api.uniqueID(&id))
}

// MemAlloc allocates size bytes with ncclMemAlloc (NCCL 2.19+): memory NCCL
// can register for its zero-copy and NVLS paths.
func (n *Library) MemAlloc(size int) (uintptr, error) {
	if size <= 0 {
		return 0, gccl.Errorf(gccl.InvalidArgument, "size", "cannot allocate %d bytes; ask for at least one", size)
	}
	p, r := n.api.memAlloc(size)
	return p, n.check("ncclMemAlloc", 0, r)
}

// MemFree frees memory from MemAlloc.
func (n *Library) MemFree(p uintptr) error {
	if p == 0 {
		return gccl.Errorf(gccl.InvalidArgument, "ptr", "nil pointer; pass what MemAlloc returned")
	}
	return n.check("ncclMemFree", 0, n.api.memFree(p))
}

// InitRank joins rank of an nranks-rank communicator on the current device.
// It creates the communicator nonblocking (ncclCommInitRankConfig) and
// polls it ready, so that it gives up with gccl.ErrTimeout after timeout
// (aborting the half-made communicator) instead of waiting forever for a
// rank that never comes; libraries before NCCL 2.14 block in
// ncclCommInitRank instead, as NCCL does when NCCL_COMM_BLOCKING=1 overrides
// the config. The communicator's later calls wait at most timeout for the
// same reason.
func (n *Library) InitRank(nranks int, id UniqueID, rank int, timeout time.Duration) (*Comm, error) {
	switch {
	case nranks < 1:
		return nil, gccl.Errorf(gccl.InvalidArgument, "nranks", "%d ranks; a communicator has at least one", nranks)
	case rank < 0 || rank >= nranks:
		return nil, gccl.Errorf(gccl.InvalidArgument, "rank", "rank %d is out of range; it must be in [0, %d)", rank, nranks)
	case timeout <= 0:
		return nil, gccl.Errorf(gccl.InvalidArgument, "timeout", "%v; every wait needs a positive deadline", timeout)
	}
	var cfg *config
	fn := "ncclCommInitRank"
	if n.api.has("ncclCommInitRankConfig") {
		cfg, fn = &config{blocking: false}, "ncclCommInitRankConfig"
	}
	h, r := n.api.initRank(nranks, rank, &id, cfg)
	c := &Comm{n: n, h: h, nranks: nranks, rank: rank, timeout: timeout}
	if r == InProgress && h != 0 {
		r = Success
	}
	if err := n.check(fn, h, r); err != nil {
		if h != 0 {
			_ = c.Abort()
		}
		return nil, err
	}
	if err := c.settle(fn); err != nil {
		_ = c.Abort()
		return nil, err
	}
	return c, nil
}

// Comm is one rank's NCCL communicator.
type Comm struct {
	n       *Library
	h       uintptr
	nranks  int
	rank    int
	timeout time.Duration

	mu     sync.Mutex
	closed bool
}

// Count is the number of ranks; Rank this one's.
func (c *Comm) Count() int { return c.nranks }
func (c *Comm) Rank() int  { return c.rank }

// handle returns the ncclComm_t, or an error once the communicator is closed.
func (c *Comm) handle() (uintptr, error) {
	if c == nil {
		return 0, gccl.Errorf(gccl.InvalidUsage, "comm", "nil NCCL communicator")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, gccl.Errorf(gccl.InvalidUsage, "comm", "the NCCL communicator is closed")
	}
	return c.h, nil
}

// settle waits until the communicator has no operation in progress
// (ncclCommGetAsyncError no longer ncclInProgress), polling with a
// wait.Poller, and reports its state; after the timeout it gives up with
// ErrTimeout.
func (c *Comm) settle(fn string) error {
	p := wait.Poller{Deadline: time.Now().Add(c.timeout), What: fn, MaxSleep: time.Millisecond}
	for {
		state, r := c.n.api.asyncError(c.h)
		if err := c.n.check("ncclCommGetAsyncError", c.h, r); err != nil {
			return err
		}
		if state != InProgress {
			return c.n.check(fn, c.h, state)
		}
		if p.Pause() != nil {
			return gccl.Errorf(gccl.TimeoutError, fn, "NCCL communicator (rank %d of %d) still in progress after %v; "+
				"a rank may have failed or not started (raise -timeout or GCCL_TIMEOUT if it is just slow)",
				c.rank, c.nranks, c.timeout)
		}
	}
}

// AsyncError returns the communicator's asynchronous error (nil when none;
// gccl.ErrInProgress while a nonblocking operation is being set up).
func (c *Comm) AsyncError() error {
	h, err := c.handle()
	if err != nil {
		return err
	}
	state, r := c.n.api.asyncError(h)
	if err := c.n.check("ncclCommGetAsyncError", h, r); err != nil {
		return err
	}
	return c.n.check("ncclCommGetAsyncError", h, state)
}

// Close destroys the communicator (ncclCommDestroy). It is safe on nil and
// twice; after a failure or a timeout, use Abort instead.
func (c *Comm) Close() error { return c.shut(false) }

// Abort aborts the communicator's operations and frees it (ncclCommAbort).
// It is safe on nil and twice.
func (c *Comm) Abort() error { return c.shut(true) }

func (c *Comm) shut(abort bool) error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	fn, f := "ncclCommDestroy", c.n.api.destroy
	if abort {
		fn, f = "ncclCommAbort", c.n.api.abort
	}
	r := f(c.h)
	if r == InProgress {
		r = Success // a nonblocking communicator finishes freeing itself
	}
	return c.n.check(fn, 0, r)
}

// Register registers size bytes of device memory at p with the
// communicator (ncclCommRegister, NCCL 2.19+), so collectives on it can
// skip NCCL's staging copies. Deregister before freeing the memory.
func (c *Comm) Register(p uintptr, size int) (uintptr, error) {
	h, err := c.handle()
	if err != nil {
		return 0, err
	}
	if p == 0 || size <= 0 {
		return 0, gccl.Errorf(gccl.InvalidArgument, "buff", "cannot register %d bytes at %#x; pass a device buffer and its size", size, p)
	}
	reg, r := c.n.api.register(h, p, size)
	return reg, c.n.check("ncclCommRegister", h, r)
}

// Deregister undoes Register (ncclCommDeregister).
func (c *Comm) Deregister(reg uintptr) error {
	h, err := c.handle()
	if err != nil {
		return err
	}
	if reg == 0 {
		return gccl.Errorf(gccl.InvalidArgument, "handle", "nil registration handle; pass what Register returned")
	}
	return c.n.check("ncclCommDeregister", h, c.n.api.deregister(h, reg))
}
