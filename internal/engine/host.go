package engine

import (
	"context"
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
)

// HostBackend runs operations on host streams over the transports.
type HostBackend struct{}

// Submit enqueues one task on the launch's host stream, joined to its other
// streams (hostTask). The task waits for the engine's earlier launches,
// runs the ops, and records a failure as the engine's async error (the
// stream's Synchronize returns it too).
func (HostBackend) Submit(e *Engine, l *launch) error {
	tasks, err := hostTasks([]hostPart{{e, l}})
	if err != nil {
		return err
	}
	return tasks[0].enqueue()
}

// runHost runs a launch's collectives in order, then its p2p ops together.
func (e *Engine) runHost(ctx context.Context, ops []Op) error {
	first := len(ops)
	for i := range ops {
		if ops[i].Kind.IsP2P() {
			first = i
			break
		}
		if err := e.runCollective(ctx, &ops[i]); err != nil {
			return gccl.Errorf(gccl.Code(err), "comm", "%v: %w", ops[i].String(), err)
		}
	}
	return e.runP2P(ctx, ops[first:])
}

// hostBytes views n bytes at p, nil for n == 0 or p == 0.
func hostBytes(p uintptr, n int) []byte {
	if n == 0 || p == 0 {
		return nil
	}
	return device.HostBytes(p, n)
}

func (e *Engine) runCollective(ctx context.Context, o *Op) error {
	if o.Count == 0 {
		return nil
	}
	kind := o.Kind.collective()
	if kind.Reduces() && e.red == nil {
		return gccl.Errorf(gccl.InternalError, "reducer", "the host backend has no reducer; set engine.Config.Reducer or engine.DefaultReducer")
	}
	var combine combineFunc
	var post func([]byte) error
	if kind.Reduces() {
		combine, post = e.arith(e.red, o)
	}
	if kind.Reduces() && o.Op >= gccl.NumBuiltinOps {
		var err error
		if o, err = e.premulInput(o); err != nil {
			return err
		}
	}
	if ran, err := e.tryZeroCopy(ctx, o, combine, post); ran || err != nil {
		return err
	}
	es := o.Type.Size()
	plan, err := algo.Build(algo.Params{Kind: kind, Algo: e.choose(kind, o.Count*es), NRanks: e.nranks,
		Rank: e.rank, Root: o.Root, Count: o.Count, ElemSize: es, ChunkBytes: e.chunk})
	if err != nil {
		return gccl.Errorf(gccl.InternalError, "plan", "%v", err)
	}
	send, recv := o.sizes(e.nranks)
	sendTo, recvFrom := plan.Peers()
	if err := e.connect(ctx, append(sendTo, recvFrom...)); err != nil {
		return err
	}
	if len(e.scratch) < plan.ScratchBytes {
		e.scratch = make([]byte, plan.ScratchBytes)
	}
	r := newRunner(ctx, e.conns, es, combine, countSends(plan.Steps))
	r.bufs[algo.SendBuf] = hostBytes(o.Send, send)
	r.bufs[algo.RecvBuf] = hostBytes(o.Recv, recv)
	r.bufs[algo.ScratchBuf] = e.scratch
	if err := r.run(plan.Steps); err != nil {
		return err
	}
	if post != nil && (kind != algo.Reduce || e.rank == o.Root) {
		return post(r.bufs[algo.RecvBuf])
	}
	return nil
}

// choose picks the algorithm for a collective of the given per-rank bytes.
func (e *Engine) choose(kind algo.Kind, bytes int) algo.Algorithm {
	link := algo.SHMLink
	for r, l := range e.link {
		if r != e.rank && l == algo.NetLink {
			link = l
		}
	}
	if kind == algo.AllGather || kind == algo.ReduceScatter {
		bytes *= e.nranks
	}
	return algo.Choose(kind, bytes, e.nranks, link, e.allowed)
}

// connect makes the missing connections to peers, all at once: each Connect
// waits for the peer's matching call, so connecting one by one could wait in
// a cycle.
func (e *Engine) connect(ctx context.Context, peers []int) error {
	e.connMu.Lock()
	defer e.connMu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(peers))
	conns := make([]*peerConn, e.nranks)
	for i, p := range peers {
		if e.conns[p] != nil || conns[p] != nil || p == e.rank {
			continue
		}
		conns[p] = &peerConn{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, r, err := e.ep.Connect(ctx, e.infos[p], 0)
			conns[p].send, conns[p].recv, errs[i] = s, r, wrapPeer(err, p, "connecting to")
		}()
	}
	wg.Wait()
	for p, c := range conns {
		if c != nil && c.send != nil {
			e.conns[p] = c
		}
	}
	return firstErr(errs...)
}
