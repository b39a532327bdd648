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

// checkBuffers checks that every buffer o touches on this rank lies inside
// one live allocation of the device (device.CheckRange): the send and
// receive ranges of its kind and count, but sendbuff only on Broadcast's
// root and recvbuff only on Reduce's root, as NCCL reads them.
func (o *Op) checkBuffers(rank, nranks int, check func(arg string, p uintptr, n int) error) error {
	if check == nil {
		return nil
	}
	send, recv := o.Sizes(nranks)
	if o.Kind == algo.Broadcast && rank != o.Root {
		send = 0
	}
	if o.Kind == algo.Reduce && rank != o.Root {
		recv = 0
	}
	// recvbuff first: in place it holds sendbuff, and it is the one
	// written past its end.
	if err := o.inAllocation(check, "recvbuff", o.Recv, recv); err != nil {
		return err
	}
	return o.inAllocation(check, "sendbuff", o.Send, send)
}

func (o *Op) inAllocation(check func(string, uintptr, int) error, arg string, p uintptr, n int) error {
	if n == 0 {
		return nil
	}
	err := check(arg, p, n)
	var ge *gccl.Error
	if err == nil || !errors.As(err, &ge) {
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
