package gpunet

import (
	"context"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/internal/devcopy"
	"github.com/gccl/gccl/internal/engine/proxy"
	"github.com/gccl/gccl/kernels"
)

// peerConn is a point-to-point connection pair with one peer: the FIFO
// to it and the FIFO from it (docs/gpunet.md: one pair per peer, made on
// first use, channel p2pChannel of the network).
type peerConn struct{ send, recv fifoMem }

// maxDirPieces is the most pieces of one direction (the Sends to one
// peer, or the Recvs from one) in one step: a step then always fits a
// launch (kernels.NetP2PMaxPieces).
const maxDirPieces = kernels.NetP2PMaxPieces / 2

// newPeers are the peers of ops' Sends and Recvs (this rank excluded)
// with no connection yet, in issue order.
func (g *Backend) newPeers(ops []engine.Op) []int {
	g.peerMu.Lock()
	defer g.peerMu.Unlock()
	var out []int
	seen := map[int]bool{}
	for i := range ops {
		o := &ops[i]
		if !o.Kind.IsP2P() || o.Peer == g.rank || seen[o.Peer] || g.peers[o.Peer] != nil {
			continue
		}
		seen[o.Peer] = true
		out = append(out, o.Peer)
	}
	return out
}

// connectPeers connects this rank with every peer of ops it has no
// connection with yet, both directions. Both ranks of a pair have an op
// naming the other (a Send matches a Recv), so both connect in their
// Submit. A direct pair (direct.go) shares FIFOs in GPU memory over the
// bootstrap (sharePeers); a network pair gets FIFOs in pinned host memory
// that it hands to the proxy: each rank dials first (never waiting for
// the peer), then accepts the peer's dial (waiting, within ctx, for the
// peer's Submit).
func (g *Backend) connectPeers(ctx context.Context, ops []engine.Op) error {
	peers := g.newPeers(ops)
	if len(peers) == 0 {
		return nil
	}
	var direct, net []int
	for _, p := range peers {
		if g.kind(g.rank, p) == edgeDirect {
			direct = append(direct, p)
		} else {
			net = append(net, p)
		}
	}
	dconns, nconns := newConns(len(direct)), newConns(len(net))
	if len(direct) > 0 {
		if err := g.sharePeers(ctx, g.boot, direct, dconns); err != nil {
			return err
		}
	}
	err := g.dev.Do(func() error {
		for _, c := range nconns {
			var err error
			if c.send, err = g.newFIFO(); err != nil {
				return err
			}
			if c.recv, err = g.newFIFO(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, p := range net {
		sc, err := g.ep.DialNet(ctx, g.infos[p], p2pChannel)
		if err != nil {
			return err
		}
		if err := g.addSend(nconns[i].send, sc, proxy.Label{Peer: p, Channel: p2pChannel}); err != nil {
			return err
		}
	}
	for i, p := range net {
		rc, err := g.ep.AcceptNet(ctx, p, p2pChannel)
		if err != nil {
			return err
		}
		if err := g.addRecv(nconns[i].recv, rc, proxy.Label{Peer: p, Channel: p2pChannel}); err != nil {
			return err
		}
	}
	g.peerMu.Lock()
	defer g.peerMu.Unlock()
	all, conns := append(direct, net...), append(dconns, nconns...)
	for i, p := range all {
		c := conns[i]
		g.logConn("send", p, p2pChannel, c.send.kind())
		g.logConn("recv", p, p2pChannel, c.recv.kind())
		g.peers[p] = c
	}
	return nil
}

// newConns is n empty connection pairs.
func newConns(n int) []*peerConn {
	cs := make([]*peerConn, n)
	for i := range cs {
		cs[i] = new(peerConn)
	}
	return cs
}

// p2pStep is one step of a launch's point-to-point ops: at distance d,
// chunk c of the Sends to rank+d and chunk c of the Recvs from rank-d (in
// issue order, maxDirPieces pieces a chunk). The peer at the other end of
// each direction puts the same pieces in its step (d, c), and every rank
// enqueues its steps in (d, c) order, whatever launches they are packed
// into: a launch then waits only for its peers' launches of the same
// steps, which wait only for their earlier launches, of smaller steps, so
// no cycle of waits can form.
type p2pStep struct {
	to, from   int
	send, recv []kernels.NetPiece
}

// sendRecv enqueues ops (Sends and Recvs) on s: a Send to this rank is
// copied into the Recv from this rank of the same place in issue order;
// the rest are gccl_net_p2p launches of up to kernels.NetP2PMaxPeers
// steps and kernels.NetP2PMaxPieces pieces each.
func (g *Backend) sendRecv(ops []engine.Op, s cuda.Stream) error {
	if len(ops) == 0 {
		return nil
	}
	sends, recvs := make([][]kernels.NetPiece, g.nranks), make([][]kernels.NetPiece, g.nranks)
	for i := range ops {
		o := &ops[i]
		pc := kernels.NetPiece{Bytes: uint64(o.Count * o.Type.Size())}
		switch o.Kind {
		case algo.P2PSend:
			pc.Ptr = o.Send
			sends[o.Peer] = append(sends[o.Peer], pc)
		case algo.P2PRecv:
			pc.Ptr = o.Recv
			recvs[o.Peer] = append(recvs[o.Peer], pc)
		}
	}
	if err := g.selfCopies(sends[g.rank], recvs[g.rank], s); err != nil {
		return err
	}
	var steps []p2pStep
	for d := 1; d < g.nranks; d++ {
		to, from := (g.rank+d)%g.nranks, (g.rank-d+g.nranks)%g.nranks
		sp, rp := sends[to], recvs[from]
		for len(sp) > 0 || len(rp) > 0 {
			st := p2pStep{to: to, from: from}
			st.send, sp = sp[:min(len(sp), maxDirPieces)], sp[min(len(sp), maxDirPieces):]
			st.recv, rp = rp[:min(len(rp), maxDirPieces)], rp[min(len(rp), maxDirPieces):]
			steps = append(steps, st)
		}
	}
	for len(steps) > 0 {
		n, pieces := 0, 0
		for n < len(steps) && n < kernels.NetP2PMaxPeers && pieces+len(steps[n].send)+len(steps[n].recv) <= kernels.NetP2PMaxPieces &&
			(n == 0 || steps[n].to != steps[n-1].to) { // one step per FIFO in a launch
			pieces += len(steps[n].send) + len(steps[n].recv)
			n++
		}
		if err := g.p2pLaunch(steps[:n], s); err != nil {
			return err
		}
		steps = steps[n:]
	}
	return nil
}

// selfCopies copies the k-th Send to this rank into its k-th Recv from
// this rank; the two lists must match in number and sizes.
func (g *Backend) selfCopies(sends, recvs []kernels.NetPiece, s cuda.Stream) error {
	if len(sends) != len(recvs) {
		return gccl.Errorf(gccl.InvalidUsage, "peer", "rank %d sends to itself %d times but receives from itself %d times in this launch; pair every Send to self with a Recv from self", g.rank, len(sends), len(recvs))
	}
	for k := range sends {
		if sends[k].Bytes != recvs[k].Bytes {
			return gccl.Errorf(gccl.InvalidUsage, "count", "rank %d's Send to itself number %d has %d bytes and its Recv from itself %d; they must match", g.rank, k, sends[k].Bytes, recvs[k].Bytes)
		}
		if err := devcopy.Async(g.drv, recvs[k].Ptr, sends[k].Ptr, int(sends[k].Bytes), s); err != nil {
			return err
		}
	}
	return nil
}

// p2pLaunch launches gccl_net_p2p for steps: block 2j sends step j's
// stream, block 2j+1 receives one. A direction with no pieces gets the
// unused FIFO of its peer connection, or the other direction's, which the
// kernel opens but never waits on.
func (g *Backend) p2pLaunch(steps []p2pStep, s cuda.Stream) error {
	var d kernels.NetP2PDesc
	d.SlotBytes, d.NSlots, d.NPeers = uint64(g.slotBytes), kernels.FIFOSlots, int32(len(steps))
	np := 0
	g.peerMu.Lock()
	defer g.peerMu.Unlock()
	for j, st := range steps {
		pr := &d.Peers[j]
		to, from := g.peers[st.to], g.peers[st.from]
		if to == nil && len(st.send) > 0 || from == nil && len(st.recv) > 0 {
			return gccl.Errorf(gccl.InternalError, "peer", "no connection with rank %d or %d", st.to, st.from)
		}
		// An idle direction still opens a FIFO (the kernel reads its
		// counters): any connected FIFO serves, never waited on.
		idle := to
		if idle == nil {
			idle = from
		}
		sendF, recvF := idle.send, idle.recv
		if to != nil {
			sendF = to.send
		}
		if from != nil {
			recvF = from.recv
		}
		pr.Send, pr.Recv = kernels.FIFOAt(sendF.dev), kernels.FIFOAt(recvF.dev)
		pr.SendFirst, pr.NSend = int32(np), int32(len(st.send))
		for _, pc := range st.send {
			d.Pieces[np] = pc
			pr.SendBytes += pc.Bytes
			np++
		}
		pr.RecvFirst, pr.NRecv = int32(np), int32(len(st.recv))
		for _, pc := range st.recv {
			d.Pieces[np] = pc
			pr.RecvBytes += pc.Bytes
			np++
		}
	}
	g.last.Store(&pathP2P)
	return g.launch(kernels.NetP2P, 2*len(steps), 0, s, func(a *cuda.Args) { d.Put(a.Slot(kernels.NetP2PDescBytes, kernels.NetP2PDescAlign)) })
}
