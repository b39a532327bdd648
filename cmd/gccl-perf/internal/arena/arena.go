package arena

import (
	"errors"
	"fmt"

	"github.com/gccl/gccl/bufreg"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
)

// Arena is the memory of one operation's sweep on one rank: one
// allocation big enough for the sweep's largest layout, registered with
// gccl (and with a baseline that can register) under -register.
type Arena struct {
	Base uintptr
	// RegisteredWith names the libraries the memory is registered with
	// (empty without -register).
	RegisteredWith []string
	undo           []func() error // run in reverse order by Free
}

// GcclRegister registers [p, p+size) with gccl's communicator; undo
// deregisters it.
type GcclRegister func(p uintptr, size int) (undo func() error, err error)

// Registrar is a baseline that can register the sweep's memory with its
// library (NCCL: ncclCommRegister) for zero-copy runs: New registers each
// allocation, Free deregisters it before freeing.
type Registrar interface {
	Register(p uintptr, size int) error
	Deregister(p uintptr) error
}

// CommRegister registers with c through bufreg.Register (as
// ncclCommRegister).
func CommRegister(c *comm.Comm) GcclRegister {
	return func(p uintptr, size int) (func() error, error) {
		h, err := bufreg.Register(c, p, size)
		if err != nil {
			return nil, err
		}
		return func() error { return bufreg.Deregister(h) }, nil
	}
}

// New allocates size bytes on d. With register it allocates through
// bufreg.MemAlloc (cuMem VMM on a GPU, as ncclMemAlloc), registers the
// memory with gccl (reg) and with each of regs; without, it uses d.Alloc.
// On failure whatever was done is undone.
func New(d device.Device, size int, register bool, reg GcclRegister, regs map[string]Registrar) (a *Arena, err error) {
	a = &Arena{}
	defer func() {
		if err != nil {
			err = errors.Join(err, a.Free())
			a = nil
		}
	}()
	if !register {
		if a.Base, err = d.Alloc(size); err != nil {
			return a, err
		}
		a.undo = append(a.undo, func() error { return d.Free(a.Base) })
		return a, nil
	}
	size = max(size, 1) // registration needs at least one byte
	if a.Base, err = bufreg.MemAlloc(d, size); err != nil {
		return a, fmt.Errorf("-register: allocating %d bytes with bufreg.MemAlloc: %w", size, err)
	}
	a.undo = append(a.undo, func() error { return bufreg.MemFree(a.Base) })
	undo, err := reg(a.Base, size)
	if err != nil {
		return a, fmt.Errorf("-register: registering %d bytes with gccl: %w", size, err)
	}
	a.undo = append(a.undo, undo)
	a.RegisteredWith = append(a.RegisteredWith, "gccl")
	for name, r := range regs {
		if err := r.Register(a.Base, size); err != nil {
			return a, fmt.Errorf("-register: %w", err)
		}
		a.undo = append(a.undo, func() error { return r.Deregister(a.Base) })
		a.RegisteredWith = append(a.RegisteredWith, name)
	}
	return a, nil
}

// Free deregisters and frees the memory; it is safe on nil and twice.
func (a *Arena) Free() error {
	if a == nil {
		return nil
	}
	var errs []error
	for i := len(a.undo) - 1; i >= 0; i-- {
		errs = append(errs, a.undo[i]())
	}
	a.undo = nil
	return errors.Join(errs...)
}
