package host

import (
	"context"
	"errors"
	"time"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/host/opdesc"
	"github.com/gccl/gccl/internal/engine/host/runner"
	"github.com/gccl/gccl/internal/reduce"
)

// Run runs a launch's ops on the host: its collectives in order, then its
// point-to-point ops together. The GPU-via-host backend calls it with host
// copies of its ops.
// A failure tells every connected peer (failConns): the communicator is
// failed from then on. A failure that follows a peer's refusal of this
// rank's messages reports the refusal (the disagreement), not its effects.
//
// A run that timed out waiting for peers names the rank(s) that made no
// progress (stall.go), which takes up to stallGrace more. A run cut short
// by the engine's abort (ctx cancelled: Abort, or a lost peer) did not
// stall: its peers are told of a remote failure, not of a timeout that
// would hide the abort's cause from them.
func (b *Backend) Run(ctx context.Context, ops []engine.Op) error {
	return b.ran(ctx, time.Now(), b.run(ctx, ops))
}

// ran is Run's end: err is the error of the run that began at start.
func (b *Backend) ran(ctx context.Context, start time.Time, err error) error {
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		err = gccl.Errorf(gccl.RemoteError, "comm", "rank %d: operation cut short by an abort: %v", b.rank, err)
	} else {
		err = b.namesStalled(err, time.Since(start))
	}
	if err != nil && gccl.Code(err) != gccl.InvalidUsage {
		if rerr := b.refusal(); rerr != nil {
			err = gccl.Errorf(gccl.InvalidUsage, "comm", "%v (then: %v)", rerr, err)
		}
	}
	if err != nil {
		b.failConns(err)
	}
	return err
}

func (b *Backend) run(ctx context.Context, ops []engine.Op) error {
	first := len(ops)
	for i := range ops {
		if ops[i].Kind.IsP2P() {
			first = i
			break
		}
		d := opdesc.Coll(&ops[i], b.collSeq)
		b.collSeq++
		if err := b.runCollective(ctx, &ops[i], d); err != nil {
			return collErr(&ops[i], err)
		}
	}
	return b.runSendRecv(ctx, ops[first:])
}

// collErr is the error of the collective o that failed with err, naming
// it unless err names it already.
func collErr(o *engine.Op, err error) error {
	if err == nil || opdesc.Merge(err) != nil {
		return err
	}
	return gccl.Errorf(gccl.Code(err), "comm", "%v: %w", o.String(), err)
}

func (b *Backend) runCollective(ctx context.Context, o *engine.Op, d opdesc.Desc) error {
	if o.Count == 0 {
		return nil
	}
	o, combine, post, err := b.operands(o)
	if err != nil {
		return err
	}
	if b.zc != nil && b.allowed.Has(algo.ZeroCopy) {
		if ran, err := b.zc.Run(ctx, o, d, combine, post); ran || err != nil {
			return err
		}
	}
	if err := b.runSchedules(ctx, o, d, combine); err != nil {
		return err
	}
	return b.epilogue(o, post)
}

// operands are what a collective computes with: o, or for PreMulSum o
// reading this rank's scaled input (premulInput); the runner's
// combination and the epilogue on the result (arith), nil for a
// collective that does not reduce.
func (b *Backend) operands(o *engine.Op) (*engine.Op, runner.Combine, func([]byte) error, error) {
	if !o.Kind.Reduces() {
		return o, nil, nil, nil
	}
	if b.red == nil {
		return nil, nil, nil, gccl.Errorf(gccl.InternalError, "reducer", "the host backend has no reducer; set host.Config.Reducer or host.DefaultReducer")
	}
	combine, post := b.arith(o)
	if o.Op < gccl.NumBuiltinOps {
		return o, combine, post, nil
	}
	o, err := b.premulInput(o)
	return o, combine, post, err
}

// epilogue applies post, if any, to the result where there is one.
func (b *Backend) epilogue(o *engine.Op, post func([]byte) error) error {
	if post == nil || o.Kind == algo.Reduce && b.rank != o.Root {
		return nil
	}
	_, recv := o.Sizes(b.nranks)
	return post(device.HostBytes(o.Recv, recv))
}

// schedule is a collective's plan with what the runner needs of it, kept
// for the next collective of the same parameters (an application repeats
// its collectives), so that a repeated one builds nothing.
type schedule struct {
	params algo.Params
	plan   *algo.Plan
	peers  []int       // sent to, then received from
	sends  map[int]int // runner.CountSends of the steps
	lead   int         // the plan's leading sends when no later step sends (startCollective), else -1
}

// get returns the schedule of p, building it unless it is the last one's.
// The runner reads its plan and sends only during the collective.
func (s *schedule) get(p algo.Params) (*schedule, error) {
	if s.plan != nil && s.params == p {
		return s, nil
	}
	plan, err := algo.Build(p)
	if err != nil {
		return nil, err
	}
	sendTo, recvFrom := plan.Peers()
	*s = schedule{params: p, plan: plan, peers: append(sendTo, recvFrom...), sends: runner.CountSends(plan.Steps), lead: leadingSends(plan.Steps)}
	return s, nil
}

// leadingSends is how many Send steps steps begin with when no later
// step sends (the direct schedules: a rank sends everything, then
// receives and computes), else -1.
func leadingSends(steps []algo.Step) int {
	k := 0
	for k < len(steps) && steps[k].Op == algo.Send {
		k++
	}
	for _, s := range steps[k:] {
		if s.Op.Sends() {
			return -1
		}
	}
	return k
}

// choose picks the algorithm for a collective of the given per-rank bytes.
func (b *Backend) choose(kind algo.Kind, bytes int) algo.Algorithm {
	link := algo.SHMLink
	for r, l := range b.link {
		if r != b.rank && l == algo.NetLink {
			link = l
		}
	}
	return algo.Choose(kind, bytes, b.nranks, link, b.allowed)
}

// arith resolves an op to the operator the transfer uses and the epilogue
// applied to the result (nil if none): Avg reduces as Sum then divides;
// PreMulSum reduces as Sum (runCollective scaled this rank's input first).
func (b *Backend) arith(o *engine.Op) (runner.Combine, func([]byte) error) {
	red := b.red
	base, post := o.Op, (func([]byte) error)(nil)
	switch {
	case o.Op == gccl.Avg:
		base = gccl.Sum
		post = func(p []byte) error { return red.DivN(p, o.Type, b.nranks) }
	case o.Op >= gccl.NumBuiltinOps:
		base = gccl.Sum
	}
	combine := func(dst, x, y []byte) error { return red.Combine(dst, x, y, o.Type, base) }
	return combine, post
}

// premulInput returns o reading a copy of its input that this rank's factor
// scaled: PreMulSum is Σ_r s_r·x_r, each rank scaling its own contribution
// before the sum, so every algorithm then reduces as Sum, and the user's
// buffer is left as it was. The copy lives in b.premulBuf (Go memory, which
// peers cannot map: a large zero-copy run falls back to a step schedule on
// every rank alike).
func (b *Backend) premulInput(o *engine.Op) (*engine.Op, error) {
	send, _ := o.Sizes(b.nranks)
	if cap(b.premulBuf) < send {
		b.premulBuf = make([]byte, send)
	}
	buf := b.premulBuf[:send]
	copy(buf, device.HostBytes(o.Send, send))
	sc := o.Scalar()
	if err := b.red.Scale(buf, o.Type, sc.HostBytes()); err != nil {
		return nil, err
	}
	p := *o
	p.Send = uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return &p, nil
}

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

// DefaultReducer is the arithmetic used when Config.Reducer is nil:
// package internal/reduce, for every data type and operator.
var DefaultReducer Reducer = hostReducer{}

// hostReducer adapts internal/reduce to the Reducer interface.
type hostReducer struct{}

// Combine sets dst = a op b with reduce.Into3.
func (hostReducer) Combine(dst, a, b []byte, t gccl.DataType, op gccl.RedOp) error {
	return reduce.Into3(dst, a, b, t, op)
}

// Scale multiplies buf by the scalar, one element of type t (a rank's
// PreMulSum factor), with reduce.MulScalar: integers in their type.
func (hostReducer) Scale(buf []byte, t gccl.DataType, scalar []byte) error {
	return reduce.MulScalar(buf, t, scalar)
}

// DivN divides buf by n (Avg; truncating for integer types).
func (hostReducer) DivN(buf []byte, t gccl.DataType, n int) error {
	return reduce.Scale(buf, t, 1, n)
}
