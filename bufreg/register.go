package bufreg

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/commlink"
	"github.com/gccl/gccl/internal/regcache"
)

// Handle is what Register returns: one reference to a registration of a
// communicator. Pass it to Deregister.
type Handle struct {
	h *regcache.Handle
}

// Register registers [ptr, ptr+size) of c's device memory with c, as
// ncclCommRegister does, so that operations on any sub-buffer of it can
// let peers read and write it directly instead of copying through staging
// buffers. ptr may be memory from MemAlloc (preferred), from
// Device.Alloc, or, on a GPU, any cuMemAlloc/cudaMalloc or cuMem VMM
// allocation of the communicator's device. Registering the same range
// again returns a new Handle to the same registration.
//
// Register is collective, as in NCCL: every rank of c calls it with its
// own buffer, in the same order relative to c's other registrations, and
// the ranks map each other's buffers. If one rank's buffer cannot be
// registered, every rank's call fails. The registrations belong to the
// communicator: Close and Abort release them, and their handles are
// deregistered then.
//
// With GCCL_LOCAL_REGISTER=0 (NCCL_LOCAL_REGISTER=0) Register checks its
// arguments and returns a Handle that registers nothing.
func Register(c *comm.Comm, ptr uintptr, size int) (*Handle, error) {
	regs := commlink.Regs(c)
	if regs == nil {
		if c == nil {
			return nil, gccl.Errorf(gccl.InvalidArgument, "comm", "nil communicator")
		}
		if err := c.Status(); err != nil {
			return nil, err // closed (InvalidUsage) or still initialising (InProgress)
		}
		return nil, gccl.Errorf(gccl.InvalidUsage, "comm", "communicator has no registration cache")
	}
	h, err := regs.Register(ptr, size)
	if err != nil {
		return nil, err
	}
	return &Handle{h: h}, nil
}

// Deregister drops h's reference to its registration, as
// ncclCommDeregister does; the last reference releases it. Deregistering
// a handle twice is gccl.ErrInvalidUsage, and so is dropping the last
// reference while operations that use the registration are in flight or
// captured in graphs that still exist (synchronize the streams, destroy
// the graphs, then deregister): the handle stays valid in that case.
// After the communicator was closed or aborted its handles are
// deregistered, and Deregister says so with gccl.ErrInvalidUsage.
func Deregister(h *Handle) error {
	if h == nil {
		return gccl.Errorf(gccl.InvalidArgument, "handle", "nil registration handle")
	}
	return regcache.Deregister(h.h)
}
