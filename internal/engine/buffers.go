package engine

import (
	"errors"
	"fmt"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/env"
)

// DefaultGPUCheckPointers is whether GPU communicators check every
// operation's buffers against the driver's allocations when
// GCCL_CHECK_POINTERS is unset (NCCL's NCCL_CHECK_POINTERS is 0 by
// default). The host always checks unless GCCL_CHECK_POINTERS=0: its check
// is a lookup in the device's own table of allocations.
const DefaultGPUCheckPointers = false

// checksPointers reports whether the engine of a device of kind k checks
// buffers, given GCCL_CHECK_POINTERS (nil when unset).
func checksPointers(k device.Kind, set *bool) bool {
	if set != nil {
		return *set
	}
	return k != device.CUDA || DefaultGPUCheckPointers
}

// newPointerCheck returns the engine's buffer check for its device: nil
// when GCCL_CHECK_POINTERS turns it off.
func newPointerCheck(d device.Device) func(arg string, p uintptr, n int) error {
	if !checksPointers(d.Kind(), env.Get().CheckPointers) {
		return nil
	}
	return func(arg string, p uintptr, n int) error { return device.CheckRange(d, arg, p, n) }
}

// CheckRange checks, as Launch checks each op's buffers, that the n bytes
// at p lie inside one live allocation of the engine's device (nil when
// GCCL_CHECK_POINTERS turns the check off). The send/receive patterns
// (package internal/pattern) check the whole extent their ops address
// with it, which the per-op checks cannot see: an offset that lands in
// the next allocation.
func (e *Engine) CheckRange(arg string, p uintptr, n int) error {
	if e.checkPtr == nil || n == 0 {
		return nil
	}
	return e.checkPtr(arg, p, n)
}

// checkRanges checks that the buffers o touches on this rank (need*:
// sendbuff is read only on Broadcast's root, recvbuff written only on
// Reduce's, as NCCL does) lie inside one live allocation of the device.
// recvbuff first: in place it holds sendbuff, and it is the one written
// past its end.
func (o *Op) checkRanges(inAlloc func(arg string, p uintptr, n int) error, needSend, needRecv bool, sendSz, recvSz int) error {
	if inAlloc == nil {
		return nil
	}
	if needRecv {
		if err := o.inAllocation(inAlloc, "recvbuff", o.Recv, recvSz); err != nil {
			return err
		}
	}
	if needSend {
		return o.inAllocation(inAlloc, "sendbuff", o.Send, sendSz)
	}
	return nil
}

func (o *Op) inAllocation(check func(string, uintptr, int) error, arg string, p uintptr, n int) error {
	if n == 0 {
		return nil
	}
	err := check(arg, p, n)
	if err == nil {
		return nil
	}
	var ge *gccl.Error // declared here: errors.As puts it on the heap
	if !errors.As(err, &ge) {
		return err
	}
	what := fmt.Sprintf("%v of %d %v", o.Kind, o.Count, o.Type)
	switch o.Kind {
	case algo.P2PSend:
		what += fmt.Sprintf(" to rank %d", o.Peer)
	case algo.P2PRecv:
		what += fmt.Sprintf(" from rank %d", o.Peer)
	}
	return gccl.Errorf(ge.Code, ge.Arg, "%s: %s", what, ge.Msg)
}
