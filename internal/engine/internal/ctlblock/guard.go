package ctlblock

import (
	"sync"

	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/kernels"
)

// Guard is a backend's control block and the closed flag that guards it:
// the host reads the status word (Load) only until Stop, the start of the
// backend's Close, which frees the block (Free) once its teardown allows.
// The zero Guard is open, with no block; the backend allocates it
// (Alloc) before anything else uses the Guard.
type Guard struct {
	Block
	mu     sync.Mutex
	closed bool // under mu; set once, by Stop
}

// Load is the status word's value; kernels.StatusOK while no block is
// allocated or once Stop began.
func (g *Guard) Load() uint32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.Host == 0 {
		return kernels.StatusOK
	}
	return g.load()
}

// Stop starts a backend's Close. The first call marks the block closed,
// raises the abort word when abort (every kernel wait then gives up), and
// waits for the device's work; it returns true and the wait's error. Any
// later call returns false at once: the backend is closed or closing.
//
// It waits for dev's whole context: a stream the user destroyed cannot be
// queried, and every kernel wait has a deadline (the engine's timeout).
// When dev cannot be made current (it was closed first), there is
// nothing to wait for and no error.
func (g *Guard) Stop(abort bool, dev *device.CUDADevice, drv cuda.Driver) (bool, error) {
	g.mu.Lock()
	first := !g.closed
	g.closed = true
	g.mu.Unlock()
	if !first {
		return false, nil
	}
	if abort && g.Host != 0 {
		g.abort()
	}
	var err error
	_ = dev.Do(func() error {
		err = drv.CtxSynchronize()
		return nil
	})
	return true, err
}
