package bootstrap

import (
	"context"
	"net"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/wire"
)

// join dials the root of id, proves the secret, presents h and returns the
// address list. The connection is returned open (for a relay), or nil after
// an error.
func join(ctx context.Context, id wire.RootID, h wire.Hello) (net.Conn, [][]byte, error) {
	if d, ok := ctx.Deadline(); ok {
		h.TimeoutMs = uint64(max(time.Until(d).Milliseconds(), 1))
	}
	var dialer net.Dialer
	c, err := dialer.DialContext(ctx, "tcp", id.Addr.String())
	if err != nil {
		return nil, nil, ioErr(ctx, err, "uniqueId",
			"reaching the root at "+id.Addr.String()+" (is the process that made the unique ID still running?)")
	}
	stop := watch(ctx, c)
	defer stop()
	if err := dialAuth(c, id.Key, id.Secret); err != nil {
		_ = c.Close()
		return nil, nil, ioErr(ctx, err, "uniqueId", "authenticating with the root at "+id.Addr.String())
	}
	if err := wire.WriteFrame(c, wire.TypeHello, h.Encode()); err != nil {
		_ = c.Close()
		return nil, nil, ioErr(ctx, err, "uniqueId", "sending hello to the root at "+id.Addr.String())
	}
	addrs, err := readPeers(ctx, c, id.Addr.String())
	if err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	return c, addrs, nil
}

// readPeers reads the root's answer: an address list or an error status.
func readPeers(ctx context.Context, c net.Conn, root string) ([][]byte, error) {
	typ, p, err := wire.ReadFrame(c, wire.MaxPayload)
	if err != nil {
		return nil, ioErr(ctx, err, "uniqueId", "waiting for the other ranks at the root "+root)
	}
	switch typ {
	case wire.TypeStatus:
		s, err := wire.DecodeStatus(p)
		if err != nil {
			return nil, err
		}
		if err := s.Err(); err != nil {
			return nil, err
		}
		return nil, gccl.Errorf(gccl.RemoteError, "uniqueId", "the root %s answered success without a rank list", root)
	case wire.TypePeers:
		ps, err := wire.DecodePeers(p)
		return ps.Addrs, err
	}
	return nil, gccl.Errorf(gccl.RemoteError, "uniqueId", "the root %s answered with an unexpected %v", root, typ)
}

// rendezvousAll joins the single root of id as rank of nranks.
func rendezvousAll(ctx context.Context, id wire.RootID, nranks, rank int, addr string) ([][]byte, error) {
	c, addrs, err := join(ctx, id, wire.Hello{NRanks: uint32(nranks), Rank: uint32(rank), Addr: []byte(addr)})
	if err != nil {
		return nil, err
	}
	_ = c.Close()
	return addrs, nil
}

// sliceOf returns the slice [lo, hi) of ranks that rank belongs to when
// nranks are split over k roots, and the slice's index.
func sliceOf(nranks, k, rank int) (j, lo, hi int) {
	for j = range k {
		lo, hi = j*nranks/k, (j+1)*nranks/k
		if rank < hi {
			return j, lo, hi
		}
	}
	return k - 1, lo, hi
}

// rendezvousScalable joins the root of rank's slice; the slice's leader also
// joins the leaders' rendezvous at ids[0] and hands the full list back.
func rendezvousScalable(ctx context.Context, ids []wire.RootID, nranks, rank int, addr string) ([][]byte, error) {
	k := len(ids)
	if k == 1 {
		return rendezvousAll(ctx, ids[0], nranks, rank, addr)
	}
	j, lo, hi := sliceOf(nranks, k, rank)
	c, slice, err := join(ctx, ids[j], wire.Hello{NRanks: uint32(hi - lo), Rank: uint32(rank - lo),
		Base: uint32(lo), Relay: true, Addr: []byte(addr)})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if rank != lo {
		stop := watch(ctx, c)
		defer stop()
		all, err := readPeers(ctx, c, ids[j].Addr.String())
		return checkCount(all, nranks, err)
	}
	mine := wire.Peers{Addrs: slice}
	_, blobs, err := join(ctx, ids[0], wire.Hello{Sub: 1, NRanks: uint32(k), Rank: uint32(j), Addr: mine.Encode()})
	var all [][]byte
	for i := 0; err == nil && i < len(blobs); i++ {
		var ps wire.Peers
		ps, err = wire.DecodePeers(blobs[i])
		all = append(all, ps.Addrs...)
	}
	if all, err = checkCount(all, nranks, err); err != nil {
		return nil, err // closing c tells the slice root, which tells the members
	}
	full := wire.Peers{Addrs: all}
	stop := watch(ctx, c)
	defer stop()
	if err := wire.WriteFrame(c, wire.TypeForward, full.Encode()); err != nil {
		return nil, ioErr(ctx, err, "uniqueId", "handing the full rank list to the slice root")
	}
	return all, nil
}

func checkCount(all [][]byte, nranks int, err error) ([][]byte, error) {
	if err == nil && len(all) != nranks {
		err = gccl.Errorf(gccl.InvalidArgument, "ids",
			"the roots gathered %d ranks, want %d: ranks passed different nranks or id lists", len(all), nranks)
	}
	if err != nil {
		return nil, err
	}
	return all, nil
}
