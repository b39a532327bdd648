package random

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/group"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/test/harness"
)

// meeting is how the ranks of a run meet: goroutines of this process
// (shared) or MPI processes.
type meeting interface {
	// newComm makes communicator i (worldComm or dupComm) over every rank.
	newComm(i int, cfg *comm.Config) (*comm.Comm, error)
	// agree tells every rank whether any rank failed.
	agree(failed bool) (bool, error)
}

// rank is one rank's communicators, streams and arena for one seed.
type rank struct {
	comms   [numComms]*comm.Comm
	streams []gccl.Stream // every communicator's (one device), some shared
	dev     device.Device // the world communicator's: the arena's and streams'
	arena   uintptr
	size    int // of the arena
}

// open makes the rank's communicators and streams and an arena for the
// largest batch of seq.
func open(m meeting, cfg *comm.Config, seq sequence) (*rank, error) {
	r := &rank{}
	var err error
	for i := range dupComm + 1 {
		if r.comms[i], err = m.newComm(i, cfg); err != nil {
			return r, fmt.Errorf("making the %s communicator: %w", commNames[i], err)
		}
	}
	w := r.comms[worldComm]
	if r.comms[splitComm], err = w.Split(w.Rank()%2, w.Count()-w.Rank(), nil); err != nil {
		return r, fmt.Errorf("splitting by parity: %w", err)
	}
	r.dev, r.size = w.Device(), 1
	for range seq.streams {
		s, err := r.dev.NewStream()
		if err != nil {
			return r, fmt.Errorf("making a stream: %w", err)
		}
		r.streams = append(r.streams, s)
	}
	for _, b := range seq.batches {
		_, used := r.layout(b, 0)
		r.size = max(r.size, used)
	}
	r.arena, err = r.dev.Alloc(r.size)
	return r, err
}

// close finalises the communicators and frees the streams and the arena
// before closing them (a communicator closes the device it opened, and with
// it what was allocated there); when failed it aborts them instead, which
// frees everything.
func (r *rank) close(failed bool) error {
	var errs []error
	if failed {
		for _, c := range r.comms {
			if c != nil {
				errs = append(errs, c.Abort())
			}
		}
		return errors.Join(errs...)
	}
	for _, c := range r.comms {
		if c != nil {
			errs = append(errs, c.Finalize())
		}
	}
	for _, s := range r.streams {
		errs = append(errs, r.dev.DestroyStream(s))
	}
	if r.arena != 0 {
		errs = append(errs, r.dev.Free(r.arena))
	}
	for _, c := range r.comms {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// abort aborts every communicator, so that peers waiting on this rank fail
// at once instead of at their deadline.
func (r *rank) abort() {
	for _, c := range r.comms {
		_ = c.Abort()
	}
}

// layout places batch b for this rank and returns the arena bytes it uses.
func (r *rank) layout(b batch, first int) ([]placed, int) {
	var a arena
	ps := make([]placed, len(b.ops))
	for i, o := range b.ops {
		c := r.comms[o.comm]
		ps[i] = place(&a, first+i, o, c.Rank(), c.Count())
	}
	return ps, a.used
}

// opFailure is an error of one operation.
type opFailure struct {
	p   placed
	err error
}

func (f opFailure) Error() string {
	return fmt.Sprintf("op %d (%s, rank %d of %d): %v", f.p.index, f.p.o.describe(f.p.c), f.p.rank, f.p.size, f.err)
}

// run runs batch b (its first operation is the sequence's first-th):
// writes inputs and Poison, launches every operation on its stream with
// no synchronisation in between, waits for every stream and checks every
// operation.
func (r *rank) run(b batch, first int, wait func(device.Device, gccl.Stream) error) error {
	ps, used := r.layout(b, first)
	img := harness.PoisonBytes(used)
	for i := range ps {
		ps[i].fill(img)
	}
	if used > 0 {
		if err := r.dev.CopyIn(r.arena, img); err != nil {
			return fmt.Errorf("writing the inputs: %w", err)
		}
	}
	calls := make([]harness.Call, len(ps))
	for i, p := range ps {
		var err error
		if calls[i], err = r.call(p); err != nil {
			return opFailure{p, err}
		}
		defer r.forget(p, calls[i])
	}
	if err := r.launch(b, ps, calls); err != nil {
		return err
	}
	for i, s := range r.streams {
		if err := wait(r.dev, s); err != nil {
			if errors.Is(err, gccl.ErrTimeout) {
				dumpStacks()
			}
			return fmt.Errorf("ops %d-%d: waiting for stream %d: %w", first, first+len(ps)-1, i, err)
		}
	}
	for i, c := range r.comms {
		if err := c.AsyncError(); err != nil {
			return fmt.Errorf("ops %d-%d: the %s communicator: %w", first, first+len(ps)-1, commNames[i], err)
		}
	}
	out := make([]byte, used)
	if used > 0 {
		if err := r.dev.CopyOut(out, r.arena); err != nil {
			return fmt.Errorf("reading the results: %w", err)
		}
	}
	var errs []error
	for _, p := range ps {
		if err := p.check(out); err != nil {
			errs = append(errs, opFailure{p, err})
		}
	}
	if len(errs) > 0 {
		return wrongData{errors.Join(errs...)}
	}
	return nil
}

// launch launches b's operations one by one or as one group, added in
// this rank's order (batch.addOrder).
func (r *rank) launch(b batch, ps []placed, calls []harness.Call) error {
	if !b.group {
		for i, p := range ps {
			if err := calls[i].Launch(r.comms[p.o.comm], r.stream(p.o)); err != nil {
				return opFailure{p, fmt.Errorf("launch: %w", err)}
			}
		}
		return nil
	}
	g := group.New()
	order := b.addOrder(r.comms[worldComm].Rank())
	for _, i := range order {
		calls[i].Add(g, r.comms[ps[i].o.comm], r.stream(ps[i].o))
	}
	if err := g.End(); err != nil {
		added := make([]int, len(order))
		for j, i := range order {
			added[j] = ps[i].index
		}
		return fmt.Errorf("group of ops %d-%d (added in order %v): %w", ps[0].index, ps[len(ps)-1].index, added, err)
	}
	return nil
}

func (r *rank) stream(o op) gccl.Stream { return r.streams[o.stream] }

// call resolves p's buffers and operator (a PreMulSum made now).
func (r *rank) call(p placed) (harness.Call, error) {
	c := harness.Call{Case: p.c, Send: r.arena + uintptr(p.send), Recv: r.arena + uintptr(p.recv), RedOp: p.c.Op}
	if p.c.Op != harness.PreMulSum {
		return c, nil
	}
	cm := r.comms[p.o.comm]
	var err error
	if p.scalar >= 0 {
		c.RedOp, err = coll.CreatePreMulSum(cm, r.arena+uintptr(p.scalar), p.c.T, coll.ScalarDevice)
	} else {
		host := reduce.Encode(p.c.T, p.c.Scalar) // copied by CreatePreMulSum
		c.RedOp, err = coll.CreatePreMulSum(cm, uintptr(unsafe.Pointer(&host[0])), p.c.T, coll.ScalarHostImmediate)
		runtime.KeepAlive(host)
	}
	if err != nil {
		return c, fmt.Errorf("CreatePreMulSum: %w", err)
	}
	return c, nil
}

// forget destroys the PreMulSum operator of c, once its batch is over
// (destroying it earlier fails the operation: issue 16).
func (r *rank) forget(p placed, c harness.Call) {
	if c.RedOp != c.Op {
		_ = coll.DestroyRedOp(r.comms[p.o.comm], c.RedOp)
	}
}

// mpiWait waits for s with MPI progress, up to the run's deadline.
func mpiWait(d device.Device, s gccl.Stream) error { return mpiboot.Wait(d, s, *timeout) }
