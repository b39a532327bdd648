// Package ctlblock is the host-mapped control block of the engine's GPU
// backends (package gpu and gpunet): pinned host memory that the kernels
// see through a device address, word 0 the abort flag the host sets,
// word 1 the status word the kernels (and gpunet's proxy) report failures
// to, so that no launch needs a copy back to learn them; and the typed
// error of each status.
//
// A backend holds its block in a Guard, which keeps the host from reading
// the block once Close began (Close frees it) and is the start of every
// such Close: mark the backend closed, raise the abort word for an
// abort, wait for the device's work.
package ctlblock

import (
	"sync/atomic"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/kernels"
)

// The words of the block.
const (
	abortWord  = 0
	statusWord = 1
	// Bytes is the block's size.
	Bytes = 8
)

// Block is a control block: Host its host address, Dev the kernels'. The
// zero Block is none.
type Block struct{ Host, Dev uintptr }

// Alloc allocates a zeroed block (the device's context current).
func Alloc(drv cuda.Driver) (Block, error) {
	h, err := drv.MemHostAlloc(Bytes, cuda.HostAllocDeviceMap|cuda.HostAllocPortable)
	if err != nil {
		return Block{}, gccl.Errorf(gccl.Code(err), "comm", "allocating the host-mapped control block: %w", err)
	}
	clear(device.HostBytes(h, Bytes))
	d, err := drv.MemHostGetDevicePointer(h)
	if err != nil {
		_ = drv.MemFreeHost(h)
		return Block{}, gccl.Errorf(gccl.Code(err), "comm", "mapping the control block: %w", err)
	}
	return Block{Host: h, Dev: d}, nil
}

// Free frees the block (the device's work done); the zero Block is a no-op.
func (b *Block) Free(drv cuda.Driver) error {
	if b.Host == 0 {
		return nil
	}
	err := drv.MemFreeHost(b.Host)
	*b = Block{}
	return err
}

func (b Block) word(i int) *uint32 {
	return (*uint32)(unsafe.Pointer(&device.HostBytes(b.Host, Bytes)[4*i]))
}

// AbortFlag and Status are the words' device addresses (kernels.DevComm's).
func (b Block) AbortFlag() uintptr { return b.Dev + 4*abortWord }
func (b Block) Status() uintptr    { return b.Dev + 4*statusWord }

// StatusWord is the status word as the host sees it.
func (b Block) StatusWord() *uint32 { return b.word(statusWord) }

// abort tells every kernel wait to give up.
func (b Block) abort() { atomic.StoreUint32(b.word(abortWord), 1) }

// load is the status word's value.
func (b Block) load() uint32 { return atomic.LoadUint32(b.word(statusWord)) }

// Err is the typed error of a kernel status st, nil for kernels.StatusOK.
// kernels.StatusNetwork, which only gpunet's proxy writes, is the caller's
// to turn into the proxy's error; here it is a generic network error.
func Err(st uint32) error {
	switch st {
	case kernels.StatusOK:
		return nil
	case kernels.StatusTimeout:
		return gccl.Errorf(gccl.TimeoutError, "comm", "a GPU kernel waited longer than the timeout for a peer; a peer is gone or stuck (raise GCCL_TIMEOUT if it is just slow)")
	case kernels.StatusAborted:
		return gccl.Errorf(gccl.RemoteError, "comm", "a GPU kernel saw the communicator aborted")
	case kernels.StatusBadUsage:
		return gccl.Errorf(gccl.InvalidUsage, "comm", "the ranks launched different operations (kind, count, data type, reduction operator or root differ, or a rank skipped or reordered one) or disagreed on buffer registration (registered on some ranks only, or at different offsets or registrations); issue the same collectives in the same order on every rank, with registered buffers at the same offset on all or on none")
	case kernels.StatusNetwork:
		return gccl.Errorf(gccl.RemoteError, "comm", "a network transfer of the communicator failed (a peer died or the network broke); check the peers' logs, then recreate the communicator")
	}
	return gccl.Errorf(gccl.InternalError, "comm", "a GPU kernel reported status %d (scratch too small for the launch)", st)
}
