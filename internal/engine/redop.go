package engine

import (
	"sync"
	"unsafe"

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

// premul is one operator made by CreatePreMulSum, and what an operation
// that uses it captures when it is enqueued (Op.premul), so that
// DestroyRedOp may follow as soon as the call returns, as in NCCL.
type premul struct {
	t      gccl.DataType
	res    Residence
	value  [8]byte // ScalarHostImmed: the scalar's bytes (t.Size() of them)
	scalar uintptr // ScalarDevice: where the scalar is read when the operation runs
}

// hostScalar is the scalar's bytes on the host backend, where a
// ScalarDevice pointer is host memory read when the operation runs.
func (p *premul) hostScalar() []byte {
	if p.res == ScalarDevice {
		return device.HostBytes(p.scalar, p.t.Size())
	}
	return p.value[:p.t.Size()]
}

type redopTable struct {
	mu   sync.Mutex
	next gccl.RedOp
	ops  map[gccl.RedOp]premul
}

func newRedopTable() redopTable {
	return redopTable{next: gccl.NumBuiltinOps, ops: map[gccl.RedOp]premul{}}
}

// CreatePreMulSum makes an operator that multiplies this rank's input by the
// scalar before summing: with every rank's own operator an operation
// computes Σ_r s_r·x_r, as NCCL. scalar points to one element of type t: on
// the host for ScalarHostImmed (copied now), in device memory for
// ScalarDevice (read when each operation runs, in stream order).
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
		copy(p.value[:], device.HostBytes(scalar, t.Size()))
	}
	e.redops.mu.Lock()
	defer e.redops.mu.Unlock()
	op := e.redops.next
	e.redops.next++
	e.redops.ops[op] = p
	return op, nil
}

// DestroyRedOp forgets an operator made by CreatePreMulSum. Operations
// already enqueued with it are not affected (they captured it).
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

// userOp resolves an operation's user operator (CreatePreMulSum) for capture in the
// enqueued operation: it must exist now and fit o's type.
func (e *Engine) userOp(op gccl.RedOp, t gccl.DataType) (premul, error) {
	e.redops.mu.Lock()
	p, ok := e.redops.ops[op]
	e.redops.mu.Unlock()
	if !ok {
		return premul{}, gccl.Errorf(gccl.InvalidArgument, "op", "%v was not made by CreatePreMulSum on this communicator (or was destroyed)", op)
	}
	if p.t != t {
		return premul{}, gccl.Errorf(gccl.InvalidArgument, "op", "%v was made for %v, not %v", op, p.t, t)
	}
	return p, nil
}

// arith resolves an op to the operator the transfer uses and the epilogue
// applied to the result (nil if none): Avg reduces as Sum then divides;
// PreMulSum reduces as Sum (runCollective scaled this rank's input first).
func (e *Engine) arith(red Reducer, o *Op) (combineFunc, func([]byte) error) {
	base, post := o.Op, (func([]byte) error)(nil)
	switch {
	case o.Op == gccl.Avg:
		base = gccl.Sum
		post = func(b []byte) error { return red.DivN(b, o.Type, e.nranks) }
	case o.Op >= gccl.NumBuiltinOps:
		base = gccl.Sum
	}
	combine := func(dst, a, b []byte) error { return red.Combine(dst, a, b, o.Type, base) }
	return combine, post
}

// premulInput returns o reading a copy of its input that this rank's factor
// scaled: PreMulSum is Σ_r s_r·x_r, each rank scaling its own contribution
// before the sum, so every algorithm then reduces as Sum, and the user's
// buffer is left as it was. The copy lives in e.premulBuf (Go memory, which
// peers cannot map: a large zero-copy run falls back to a step schedule on
// every rank alike).
func (e *Engine) premulInput(o *Op) (*Op, error) {
	send, _ := o.sizes(e.nranks)
	if cap(e.premulBuf) < send {
		e.premulBuf = make([]byte, send)
	}
	b := e.premulBuf[:send]
	copy(b, hostBytes(o.Send, send))
	if err := e.red.Scale(b, o.Type, o.premul.hostScalar()); err != nil {
		return nil, err
	}
	p := *o
	p.Send = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return &p, nil
}
