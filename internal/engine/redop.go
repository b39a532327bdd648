package engine

import (
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
)

// Residence says where a PreMulSum scalar lives.
type Residence int

// The residences, as ncclScalarResidence_t.
const (
	ScalarDevice    Residence = iota // a pointer read when the operation runs
	ScalarHostImmed                  // a host value copied at creation
)

// Scalar is one operator made by CreatePreMulSum, as an operation that uses
// it captures it when it is launched (Op.Scalar), so that DestroyRedOp may
// follow as soon as the call returns, as in NCCL.
type Scalar struct {
	Type      gccl.DataType
	Residence Residence
	Value     [8]byte // ScalarHostImmed: the scalar's bytes (Type.Size() of them)
	Ptr       uintptr // ScalarDevice: where the scalar is read when the operation runs
}

// HostBytes is the scalar's bytes for a backend that computes on the host,
// where a ScalarDevice pointer is host memory read when the operation runs.
func (s *Scalar) HostBytes() []byte {
	if s.Residence == ScalarDevice {
		return device.HostBytes(s.Ptr, s.Type.Size())
	}
	return s.Value[:s.Type.Size()]
}

type redopTable struct {
	mu   sync.Mutex
	next gccl.RedOp
	ops  map[gccl.RedOp]Scalar
}

func newRedopTable() redopTable {
	return redopTable{next: gccl.NumBuiltinOps, ops: map[gccl.RedOp]Scalar{}}
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
	p := Scalar{Type: t, Residence: res, Ptr: scalar}
	if res == ScalarHostImmed {
		copy(p.Value[:], device.HostBytes(scalar, t.Size()))
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
func (e *Engine) userOp(op gccl.RedOp, t gccl.DataType) (Scalar, error) {
	e.redops.mu.Lock()
	p, ok := e.redops.ops[op]
	e.redops.mu.Unlock()
	if !ok {
		return Scalar{}, gccl.Errorf(gccl.InvalidArgument, "op", "%v was not made by CreatePreMulSum on this communicator (or was destroyed)", op)
	}
	if p.Type != t {
		return Scalar{}, gccl.Errorf(gccl.InvalidArgument, "op", "%v was made for %v, not %v", op, p.Type, t)
	}
	return p, nil
}
