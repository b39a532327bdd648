package transport

import (
	"context"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/transport/network"
)

// netTransport connects any two ranks through the endpoint's network
// provider (transport/network): this rank connects to the peer's listener
// for what it sends, and accepts the peer's connection on its first
// receive; netSend and netRecv turn the provider's transfers into Conns.
type netTransport struct{}

func (netTransport) Name() string { return "net" }

// CanConnect: always; every rank listens.
func (netTransport) CanConnect(me, peer PeerInfo) bool { return true }

func (netTransport) Connect(ctx context.Context, e *Endpoint, peer PeerInfo, channel int) (Conn, Conn, error) {
	if peer.NetName != e.info.NetName {
		return nil, nil, gccl.Errorf(gccl.InvalidUsage, "GCCL_NET", "rank %d uses network provider %q and rank %d uses %q: set GCCL_NET (or Config.NetName) to the same provider on every rank",
			e.cfg.Rank, e.info.NetName, peer.Rank, peer.NetName)
	}
	sc, err := e.net.Connect(ctx, e.dev, peer.NetHandle, e.netConfig(), channel)
	if err != nil {
		return nil, nil, err
	}
	s, err := newNetSend(sc, e.cfg.NetChunkSize, e.cfg.Timeout)
	if err != nil {
		sc.Close()
		return nil, nil, err
	}
	e.logConn("send", peer.Rank, channel)
	from := network.Peer{Rank: peer.Rank, Channel: channel}
	r := newLazyRecv(func(ctx context.Context) (Conn, error) {
		rc, err := e.ln.Accept(ctx, from)
		if err != nil {
			return nil, err
		}
		r, err := newNetRecv(rc, e.cfg.NetChunkSize, e.cfg.Timeout)
		if err != nil {
			rc.Close()
			return nil, err
		}
		e.logConn("recv", peer.Rank, channel)
		return r, nil
	}, func() { e.ln.Reject(from) })
	return s, r, nil
}

// logConn says at INFO which provider and device a connection uses.
func (e *Endpoint) logConn(dir string, peer, channel int) {
	env.Logger("NET").Info("connection", "rank", e.cfg.Rank, "peer", peer, "channel", channel, "direction", dir,
		"provider", e.info.NetName, "device", e.prop.Name)
}
