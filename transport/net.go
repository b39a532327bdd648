package transport

import (
	"context"
	gonet "net"

	tnet "github.com/gccl/gccl/transport/internal/net"
)

// netTransport connects any two ranks through TCP sockets
// (transport/internal/net): this rank dials the peer's listener for what
// it sends, and accepts the peer's dial on its first receive.
type netTransport struct{}

func (netTransport) Name() string { return "net" }

// CanConnect: always; every rank listens.
func (netTransport) CanConnect(me, peer PeerInfo) bool { return true }

func (netTransport) Connect(ctx context.Context, e *Endpoint, peer PeerInfo, channel int) (Conn, Conn, error) {
	opts := tnet.Options{ChunkSize: e.cfg.NetChunkSize, Timeout: e.cfg.Timeout}
	out, err := e.ln.Dial(ctx, peer.NetAddr, channel, e.cfg.NetSockets)
	if err != nil {
		return nil, nil, err
	}
	s, err := tnet.NewSender(out, opts)
	if err != nil {
		closeAll(out)
		return nil, nil, err
	}
	r := newLazyRecv(func(ctx context.Context) (Conn, error) {
		in, err := e.ln.Accept(ctx, peer.Rank, channel, e.cfg.NetSockets)
		if err != nil {
			return nil, err
		}
		r, err := tnet.NewReceiver(in, opts)
		if err != nil {
			closeAll(in)
			return nil, err
		}
		return r, nil
	}, func() { e.ln.Reject(peer.Rank, channel) })
	return s, r, nil
}

func closeAll(cs []gonet.Conn) {
	for _, c := range cs {
		c.Close()
	}
}
