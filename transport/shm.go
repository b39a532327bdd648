package transport

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/gccl/gccl/transport/internal/shm"
	"github.com/gccl/gccl/transport/topo"
)

// shmTransport connects two ranks of one host through shared-memory rings
// (transport/internal/shm): each rank creates the ring it sends on, named
// from its prefix, and opens the peer's on its first receive.
type shmTransport struct{}

func (shmTransport) Name() string { return "shm" }

// CanConnect: both ranks on one host, both publishing a prefix (neither
// disabled shared memory).
func (shmTransport) CanConnect(me, peer PeerInfo) bool {
	return me.ShmPrefix != "" && peer.ShmPrefix != "" && topo.SameHost(me.HostHash, peer.HostHash)
}

func (shmTransport) Connect(_ context.Context, e *Endpoint, peer PeerInfo, channel int) (Conn, Conn, error) {
	s, err := shm.Create(filepath.Join(e.cfg.ShmDir, ringName(e.info.ShmPrefix, peer.Rank, channel)), e.cfg.shmOptions())
	if err != nil {
		return nil, nil, err
	}
	path := filepath.Join(e.cfg.ShmDir, ringName(peer.ShmPrefix, e.cfg.Rank, channel))
	r := newLazyRecv(func(ctx context.Context) (Conn, error) {
		return shm.Open(ctx, path, e.cfg.shmOptions())
	}, func() { shm.Abandon(path) })
	return s, r, nil
}

func ringName(prefix string, toRank, channel int) string {
	return fmt.Sprintf("%s-%d-%d", prefix, toRank, channel)
}
