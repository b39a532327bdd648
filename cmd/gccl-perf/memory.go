package main

import (
	"errors"
	"fmt"

	"github.com/gccl/gccl/bufreg"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/layout"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/perf"
)

// arena is the memory of one operation's sweep on one rank: one
// allocation big enough for the sweep's largest layout, registered with
// gccl (and with a baseline that can register) under -register.
type arena struct {
	base uintptr
	size int
	// registeredWith names the libraries the memory is registered with
	// (empty without -register).
	registeredWith []string
	undo           []func() error // run in reverse order by free
}

// gcclRegister registers [p, p+size) with gccl's communicator; undo
// deregisters it.
type gcclRegister func(p uintptr, size int) (undo func() error, err error)

// commRegister registers with c through bufreg.Register (as
// ncclCommRegister).
func commRegister(c *comm.Comm) gcclRegister {
	return func(p uintptr, size int) (func() error, error) {
		h, err := bufreg.Register(c, p, size)
		if err != nil {
			return nil, err
		}
		return func() error { return bufreg.Deregister(h) }, nil
	}
}

// newArena allocates size bytes on d. With register it allocates through
// bufreg.MemAlloc (cuMem VMM on a GPU, as ncclMemAlloc), registers the
// memory with gccl (reg) and with each of regs; without, it uses d.Alloc.
// On failure whatever was done is undone.
func newArena(d device.Device, size int, register bool, reg gcclRegister, regs map[string]registrar) (a *arena, err error) {
	a = &arena{size: size}
	defer func() {
		if err != nil {
			err = errors.Join(err, a.free())
			a = nil
		}
	}()
	if !register {
		if a.base, err = d.Alloc(size); err != nil {
			return a, err
		}
		a.undo = append(a.undo, func() error { return d.Free(a.base) })
		return a, nil
	}
	size = max(size, 1) // registration needs at least one byte
	if a.base, err = bufreg.MemAlloc(d, size); err != nil {
		return a, fmt.Errorf("-register: allocating %d bytes with bufreg.MemAlloc: %w", size, err)
	}
	a.undo = append(a.undo, func() error { return bufreg.MemFree(a.base) })
	undo, err := reg(a.base, size)
	if err != nil {
		return a, fmt.Errorf("-register: registering %d bytes with gccl: %w", size, err)
	}
	a.undo = append(a.undo, undo)
	a.registeredWith = append(a.registeredWith, "gccl")
	for name, r := range regs {
		if err := r.Register(a.base, size); err != nil {
			return a, fmt.Errorf("-register: %w", err)
		}
		a.undo = append(a.undo, func() error { return r.Deregister(a.base) })
		a.registeredWith = append(a.registeredWith, name)
	}
	return a, nil
}

// free deregisters and frees the memory; it is safe on nil and twice.
func (a *arena) free() error {
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

// alloc allocates the memory for the largest layout of op's sweep,
// registered with gccl and with the baseline (when it runs this op and can
// register) under -register.
func (r *ranker) alloc(op perf.Op, sizes []int64, withBase bool) (*arena, error) {
	bytes, err := r.arenaBytes(op, sizes)
	if err != nil {
		return nil, err
	}
	regs := map[string]registrar{}
	if reg, ok := r.base.(registrar); ok && withBase {
		regs[r.base.Name()] = reg
	}
	return newArena(r.dev, bytes, r.cfg.register, r.reg, regs)
}

// arenaBytes is the memory the largest layout of op at sizes needs.
func (r *ranker) arenaBytes(op perf.Op, sizes []int64) (int, error) {
	most := 0
	for _, s := range sizes {
		l, err := layout.New(op, s, r.cfg.dtype, r.rank, r.nranks, r.cfg.inplace)
		if err != nil {
			return 0, err
		}
		most = max(most, l.MemElems)
	}
	return most * r.cfg.dtype.Size(), nil
}
