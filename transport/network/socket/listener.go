package socket

import (
	"context"
	gonet "net"

	tnet "github.com/gccl/gccl/transport/internal/net"
	"github.com/gccl/gccl/transport/network"
)

// listener is a rank's TCP listener (network.Listener): it authenticates
// incoming sockets and parks them by (rank, channel) until Accept.
type listener struct {
	ln   *tnet.Listener
	h    network.Handle
	opts tnet.Options
}

func (l *listener) Handle() network.Handle { return l.h }

// Accept takes the sockets from dialled for from.Channel, as many as it
// announced, and makes them the receiving end.
func (l *listener) Accept(ctx context.Context, from network.Peer) (network.RecvComm, error) {
	socks, err := l.ln.Accept(ctx, from.Rank, from.Channel, 0)
	if err != nil {
		return nil, err
	}
	r, err := tnet.NewRecvComm(socks, l.opts)
	if err != nil {
		closeAll(socks)
		return nil, err
	}
	return r, nil
}

func (l *listener) Reject(from network.Peer) { l.ln.Reject(from.Rank, from.Channel) }

func (l *listener) Close() error { return l.ln.Close() }

func closeAll(cs []gonet.Conn) {
	for _, c := range cs {
		c.Close()
	}
}
