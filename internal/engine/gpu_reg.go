package engine

import (
	"encoding/binary"
	"hash/fnv"
	"sync/atomic"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/bufreg"
	"github.com/gccl/gccl/graph"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/kernels"
)

// Stats are counters of a GPU engine's data path since it was made.
type Stats struct {
	// StagedBytes is how many bytes of user data this rank copied into or
	// out of its communication buffers (copy engines or kernels) to run
	// collectives on unregistered buffers.
	StagedBytes uint64
	// ZeroCopyOps is how many collectives ran directly on registered
	// buffers, peers loading and storing them, with no staging.
	ZeroCopyOps uint64
}

// Stats returns the data-path counters. They count what the GPU backend
// enqueued; other backends report zeros.
func (e *Engine) Stats() Stats {
	g, ok := e.backend.(*gpuBackend)
	if !ok {
		return Stats{}
	}
	return Stats{StagedBytes: g.stats.staged.Load(), ZeroCopyOps: g.stats.zeroCopy.Load()}
}

// regStats are the gpuBackend's counters behind Stats.
type regStats struct {
	staged, zeroCopy atomic.Uint64
	hostFuncHolds    atomic.Uint64 // ops whose holds a host function ended (too many pending holds)
}

// regBuf is one buffer of an op found in a collective registration.
type regBuf struct {
	reg *bufreg.Registration
	off int
}

// at is rank r's copy of the buffer as this GPU addresses it: the same
// offset in r's buffer of the same collective registration.
func (b regBuf) at(r int) uintptr { return b.reg.Peers[r].Ptr + uintptr(b.off) }

// zeroCopy runs o directly on registered buffers when every buffer the
// peers touch lies in a collective registration whose peers are mapped.
// It reports false, having done nothing, when the op must be staged. The
// kernels compare a key of the registrations and offsets across the ranks
// at their first barrier, so ranks that disagree (registered on some ranks
// only, other offsets or registrations) fail with gccl.ErrInvalidUsage
// before touching a peer's memory.
//
// While s is being captured, an op past the push kernel's limit runs on
// registrations the ranks agree on and hold for the graph's lifetime
// instead (capturedRegs, gpu_graphreg.go); up to that limit the one-shot
// and push kernels beat zero-copy and need no registration.
func (g *gpuBackend) zeroCopy(e *Engine, o *Op, s cuda.Stream) (bool, error) {
	var bufs []regBuf
	var ok bool
	var err error
	switch {
	case o.Count*o.Type.Size() > g.pushMax && g.capturing(e, s): // size first: capturing asks the driver
		bufs, ok, err = g.capturedRegs(e, o)
	case bufreg.Collective(e.boot) > 0:
		bufs, ok, err = g.lookupRegs(e, o)
	}
	if !ok || err != nil {
		return false, err
	}
	release, err := g.hold(bufs, s)
	if err != nil {
		return false, err
	}
	c := g.base
	c.RegKey = regKey(o.Kind, bufs)
	switch o.Kind {
	case AllReduce:
		err = g.zcAllReduce(e, o, bufs, &c, s)
	case AllGather:
		err = g.zcAllGather(e, o, bufs[0], &c, s)
	case Broadcast:
		err = g.zcBroadcast(e, o, bufs[0], &c, s)
	case ReduceScatter:
		err = g.zcReduceScatter(e, o, bufs[0], &c, s)
	}
	if err == nil {
		err = release(true)
	} else {
		_ = release(false)
	}
	if err == nil {
		g.stats.zeroCopy.Add(1)
	}
	return err == nil, err
}

// wanted lists the buffers of o that peers address (pointer, length), or
// nil when the kind has no zero-copy path.
func wanted(e *Engine, o *Op) [][2]uintptr {
	send, recv := o.sizes(e.nranks)
	switch o.Kind {
	case AllReduce:
		return [][2]uintptr{{o.Send, uintptr(send)}, {o.Recv, uintptr(recv)}}
	case AllGather, Broadcast: // peers store into the receive buffers (the root's is the source)
		return [][2]uintptr{{o.Recv, uintptr(recv)}}
	case ReduceScatter: // peers load the send buffers
		return [][2]uintptr{{o.Send, uintptr(send)}}
	}
	return nil
}

// lookupRegs finds the buffers of o that peers address. ok is false when
// the kind has no zero-copy path or a buffer is not registered (Register;
// graph registrations serve captured operations only) with mapped peers
// on this rank.
func (g *gpuBackend) lookupRegs(e *Engine, o *Op) ([]regBuf, bool, error) {
	want := wanted(e, o)
	if want == nil {
		return nil, false, nil
	}
	bufs := make([]regBuf, len(want))
	for i, w := range want {
		r, off, ok := bufreg.LookupNet(e.boot, w[0], int(w[1]))
		if !ok || r.Graph || len(r.Peers) != e.nranks {
			return nil, false, nil
		}
		for p, peer := range r.Peers {
			if off+int(w[1]) > peer.Len {
				return nil, false, gccl.Errorf(gccl.InvalidUsage, "buffer",
					"%v: %d bytes at offset %d of registration %d run past rank %d's registered %d bytes; register buffers of the same size on every rank",
					o.Kind, w[1], off, r.Seq, p, peer.Len)
			}
		}
		bufs[i] = regBuf{reg: r, off: off}
	}
	return bufs, true, nil
}

// hold keeps the registrations from being deregistered while the op may
// run: until the stream passes it, or, while s is being captured, for the
// lifetime of the graph. The returned function finishes the hold after
// the op was enqueued (ok) or undoes it (!ok).
func (g *gpuBackend) hold(bufs []regBuf, s cuda.Stream) (func(ok bool) error, error) {
	releases := make([]func(), 0, len(bufs))
	all := func() { runAll(releases) }
	for _, b := range bufs {
		r, err := b.reg.Acquire()
		if err != nil {
			all()
			return nil, err
		}
		releases = append(releases, r)
	}
	return func(ok bool) error {
		if !ok {
			all()
			return nil
		}
		captured, err := graph.RetainForGraph(g.drv, gccl.Stream(s), all)
		if err != nil || captured {
			if err != nil {
				all()
			}
			return err
		}
		return g.holdUntilDone(bufs, releases, s)
	}, nil
}

// holdUntilDone turns the plain holds of an eager op (releases, one per
// buffer) into pending holds that end once an event recorded after the op
// completed: Deregister polls it (cuEventQuery), so a caller that saw the
// stream finish may deregister at once, and the stream never waits for a
// host function. A registration with too many pending holds on other
// streams keeps its plain hold, released by a host function as before.
func (g *gpuBackend) holdUntilDone(bufs []regBuf, releases []func(), s cuda.Stream) error {
	d, err := g.events.record(g, s)
	if err != nil {
		runAll(releases)
		return err
	}
	var rest []func()
	for i, b := range bufs {
		d.refs.Add(1)
		held, err := b.reg.AcquireUntil(orderKey(s), d)
		if !held {
			d.Drop()
		}
		if err != nil {
			runAll(releases[i:])
			runAll(rest)
			d.Drop()
			return err
		}
		if held {
			releases[i]()
		} else {
			rest = append(rest, releases[i])
		}
	}
	d.Drop() // the reference record gave us
	if len(rest) == 0 {
		return nil
	}
	// Released synchronously, so a caller that saw the stream finish may
	// deregister at once. It never calls the driver (a host function must
	// not): a collective registration keeps a handle while used, so
	// dropping a use never releases its resources.
	g.stats.hostFuncHolds.Add(1)
	if err := g.drv.LaunchHostFunc(s, func() { runAll(rest) }); err != nil {
		runAll(rest)
		return err
	}
	return nil
}

// runAll calls each of fs.
func runAll(fs []func()) {
	for _, f := range fs {
		f()
	}
}

// regKey identifies the registrations and offsets of an op; every rank of
// a consistent op computes the same nonzero key, and staged ops use 0.
func regKey(k Kind, bufs []regBuf) uint32 {
	h := fnv.New32a()
	var b [17]byte
	b[0] = byte(k)
	for _, x := range bufs {
		binary.LittleEndian.PutUint64(b[1:], x.reg.Seq)
		binary.LittleEndian.PutUint64(b[9:], uint64(x.off))
		h.Write(b[:])
	}
	return h.Sum32() | 1
}

// zcAllReduce: the two-shot kernel over every rank's registered send and
// receive buffers: each rank reduces its part from all inputs and stores
// it into all outputs.
func (g *gpuBackend) zcAllReduce(e *Engine, o *Op, bufs []regBuf, c *kernels.Comm, s cuda.Stream) error {
	name, args, err := g.redKernel(kernels.AllReduceTwoShot, o)
	if err != nil {
		return err
	}
	for r := range e.nranks {
		c.In[r], c.Out[r] = bufs[0].at(r), bufs[1].at(r)
	}
	return g.launch(name, g.channels(o.Count*o.Type.Size()), s, c, args.put)
}

// zcAllGather: each rank stores its input straight into every rank's
// registered receive buffer.
func (g *gpuBackend) zcAllGather(e *Engine, o *Op, recv regBuf, c *kernels.Comm, s cuda.Stream) error {
	total := o.Count * o.Type.Size()
	for r := range e.nranks {
		c.Out[r] = recv.at(r)
	}
	c.In[e.rank] = o.Send
	return g.launch(kernels.AllGather, g.channels(total), s, c, func(a *cuda.Args) { a.U64(uint64(total)) })
}

// zcBroadcast: the root's registered receive buffer is the source (the
// root first copies its send buffer there unless in place); every rank
// pulls its part from the root and stores it into every rank's buffer.
func (g *gpuBackend) zcBroadcast(e *Engine, o *Op, recv regBuf, c *kernels.Comm, s cuda.Stream) error {
	total := o.Count * o.Type.Size()
	if e.rank == o.Root {
		if err := g.copyAsync(o.Recv, o.Send, total, s); err != nil {
			return err
		}
	}
	for r := range e.nranks {
		c.Out[r] = recv.at(r)
	}
	c.In[o.Root], c.Root = recv.at(o.Root), int32(o.Root)
	return g.launch(kernels.Broadcast, g.channels(total), s, c, func(a *cuda.Args) { a.U64(uint64(total)) })
}

// zcReduceScatter: each rank reduces its block from every rank's
// registered send buffer into its own receive buffer.
func (g *gpuBackend) zcReduceScatter(e *Engine, o *Op, send regBuf, c *kernels.Comm, s cuda.Stream) error {
	name, args, err := g.redKernel(kernels.ReduceScatter, o)
	if err != nil {
		return err
	}
	for r := range e.nranks {
		c.In[r] = send.at(r)
	}
	c.Out[e.rank] = o.Recv
	return g.launch(name, g.channels(o.Count*o.Type.Size()), s, c, args.put)
}

// countStaged adds the bytes a staged collective copies through this
// rank's communication buffers.
func (g *gpuBackend) countStaged(e *Engine, o *Op) {
	g.stats.staged.Add(uint64(stagedBytes(o, e.rank, e.nranks)))
}

// stagedBytes is what the staged path of o moves between user buffers and
// this rank's communication buffers: inputs in, results out.
func stagedBytes(o *Op, me, n int) int {
	b := o.Count * o.Type.Size()
	switch o.Kind {
	case AllReduce:
		return 2 * b
	case ReduceScatter:
		return n * b
	case AllGather:
		return n * b
	case Broadcast:
		if me == o.Root {
			return 2 * b
		}
		return b
	case Reduce:
		if me == o.Root {
			return 2 * b
		}
		return b
	}
	return 0
}

// keyed reports whether the communicator has collective registrations, so
// every collective must take a kernel that checks the registration key at
// a barrier: the one-shot all-reduce (no barrier) is then not used.
func keyed(e *Engine) bool { return bufreg.Collective(e.boot) > 0 }

// unregisterAll releases the communicator's collective registrations
// when the engine closes.
func (e *Engine) unregisterAll() error {
	if e.boot == nil {
		return nil
	}
	return bufreg.DeregisterNet(e.boot)
}
