package transport

import (
	"context"
	"fmt"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	tnet "github.com/gccl/gccl/transport/internal/net"
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
	s, err := newNetSend(sc, e.cfg.NetChunkSize, e.cfg.Timeout, &e.aborting)
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
		r, err := newNetRecv(rc, e.cfg.NetChunkSize, e.cfg.Timeout, &e.aborting)
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

// DialNet opens a provider-level sending connection to peer on channel,
// for callers that move their own memory over the network provider (the
// proxy of a GPU communicator across hosts, internal/engine/proxy): no
// Conn, no chunking, the provider's SendComm itself. It never waits for
// the peer's AcceptNet. Channels are shared with Connect's: each (peer,
// channel) is connected once, whichever way. The caller owns the SendComm
// and closes it; Endpoint.Close does not.
func (e *Endpoint) DialNet(ctx context.Context, peer PeerInfo, channel int) (network.SendComm, error) {
	if err := peer.Validate(); err != nil {
		return nil, err
	}
	if channel < 0 || channel >= tnet.MaxChannel {
		return nil, gccl.Errorf(gccl.InvalidArgument, "channel", "channel %d out of range (0..%d)", channel, tnet.MaxChannel-1)
	}
	if peer.NetName != e.info.NetName {
		return nil, gccl.Errorf(gccl.InvalidUsage, "GCCL_NET", "rank %d uses network provider %q and rank %d uses %q: set GCCL_NET (or Config.NetName) to the same provider on every rank",
			e.cfg.Rank, e.info.NetName, peer.Rank, peer.NetName)
	}
	if err := e.reserve(peer.Rank, channel); err != nil {
		return nil, err
	}
	sc, err := e.net.Connect(ctx, e.dev, peer.NetHandle, e.netConfig(), channel)
	if err != nil {
		e.mu.Lock()
		delete(e.used, [2]int{peer.Rank, channel})
		e.mu.Unlock()
		return nil, fmt.Errorf("connecting to rank %d, channel %d over network provider %s: %w", peer.Rank, channel, e.info.NetName, err)
	}
	e.logConn("send", peer.Rank, channel)
	return sc, nil
}

// AcceptNet returns the receiving end of the connection that rank peer
// opens to this rank on channel with DialNet, waiting within ctx for it.
// The caller owns the RecvComm and closes it.
func (e *Endpoint) AcceptNet(ctx context.Context, peer, channel int) (network.RecvComm, error) {
	rc, err := e.ln.Accept(ctx, network.Peer{Rank: peer, Channel: channel})
	if err != nil {
		return nil, fmt.Errorf("accepting rank %d's connection, channel %d, over network provider %s: %w", peer, channel, e.info.NetName, err)
	}
	e.logConn("recv", peer, channel)
	return rc, nil
}
