package engine

import (
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
)

// Reducer is the element-wise arithmetic the host backend needs
// (internal/reduce provides it; tests may pass their own).
type Reducer interface {
	// Combine sets dst = a op b element-wise for the built-in op Sum, Prod, Max or Min.
	Combine(dst, a, b []byte, t gccl.DataType, op gccl.RedOp) error
	// Scale multiplies every element of buf by scalar, one element of type t.
	Scale(buf []byte, t gccl.DataType, scalar []byte) error
	// DivN divides every element of buf by n (Avg: integer division for integer types).
	DivN(buf []byte, t gccl.DataType, n int) error
}

// Residence says where a PreMulSum scalar lives.
type Residence int

// The residences, as ncclScalarResidence_t.
const (
	ScalarDevice    Residence = iota // a pointer read when the operation runs
	ScalarHostImmed                  // a host value copied at creation
)

// premul is one operator made by CreatePreMulSum.
type premul struct {
	t      gccl.DataType
	res    Residence
	value  []byte  // ScalarHostImmed
	scalar uintptr // ScalarDevice
}

type redopTable struct {
	mu   sync.Mutex
	next gccl.RedOp
	ops  map[gccl.RedOp]premul
}

func newRedopTable() redopTable {
	return redopTable{next: gccl.NumBuiltinOps, ops: map[gccl.RedOp]premul{}}
}

// CreatePreMulSum makes an operator that multiplies every input by the
// scalar before summing (computed as sum then scale, which is the same up to
// rounding). scalar points to one element of type t: on the host for
// ScalarHostImmed (copied now), in device memory for ScalarDevice (read when
// each operation runs).
func (e *Engine) CreatePreMulSum(scalar uintptr, t gccl.DataType, res Residence) (gccl.RedOp, error) {
	switch {
	case !t.Valid():
		return 0, gccl.Errorf(gccl.InvalidArgument, "datatype", "CreatePreMulSum: unknown data type %d", int(t))
	case scalar == 0:
		return 0, gccl.Errorf(gccl.InvalidArgument, "scalar", "CreatePreMulSum: scalar is nil; pass a pointer to one %v", t)
	case res != ScalarDevice && res != ScalarHostImmed:
		return 0, gccl.Errorf(gccl.InvalidArgument, "residence", "CreatePreMulSum: unknown residence %d", int(res))
	}
	p := premul{t: t, res: res, scalar: scalar}
	if res == ScalarHostImmed {
		p.value = append([]byte(nil), device.HostBytes(scalar, t.Size())...)
	}
	e.redops.mu.Lock()
	defer e.redops.mu.Unlock()
	op := e.redops.next
	e.redops.next++
	e.redops.ops[op] = p
	return op, nil
}

// DestroyRedOp forgets an operator made by CreatePreMulSum.
func (e *Engine) DestroyRedOp(op gccl.RedOp) error {
	e.redops.mu.Lock()
	defer e.redops.mu.Unlock()
	if _, ok := e.redops.ops[op]; !ok {
		return gccl.Errorf(gccl.InvalidArgument, "op", "DestroyRedOp: %v was not made by CreatePreMulSum on this communicator (or was destroyed)", op)
	}
	delete(e.redops.ops, op)
	return nil
}

// validOp reports whether op names a live user operator.
func (e *Engine) validOp(op gccl.RedOp) bool {
	e.redops.mu.Lock()
	defer e.redops.mu.Unlock()
	_, ok := e.redops.ops[op]
	return ok
}

// arith resolves an op to the operator the transfer uses and the epilogue
// applied to the result (nil if none): Avg and PreMulSum reduce as Sum.
func (e *Engine) arith(red Reducer, o *Op) (combineFunc, func([]byte) error, error) {
	base, post := o.Op, (func([]byte) error)(nil)
	switch {
	case o.Op == gccl.Avg:
		base = gccl.Sum
		post = func(b []byte) error { return red.DivN(b, o.Type, e.nranks) }
	case o.Op >= gccl.NumBuiltinOps:
		e.redops.mu.Lock()
		p, ok := e.redops.ops[o.Op]
		e.redops.mu.Unlock()
		if !ok {
			return nil, nil, gccl.Errorf(gccl.InvalidArgument, "op", "%v was destroyed before the operation ran", o.Op)
		}
		if p.t != o.Type {
			return nil, nil, gccl.Errorf(gccl.InvalidArgument, "op", "%v was made for %v, not %v", o.Op, p.t, o.Type)
		}
		base = gccl.Sum
		post = func(b []byte) error {
			v := p.value
			if p.res == ScalarDevice {
				v = device.HostBytes(p.scalar, o.Type.Size())
			}
			return red.Scale(b, o.Type, v)
		}
	}
	combine := func(dst, a, b []byte) error { return red.Combine(dst, a, b, o.Type, base) }
	return combine, post, nil
}
