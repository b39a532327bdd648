package socket

import (
	"context"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/require"
)

// TestChecksumSettingReachesTheWire: GCCL_SOCKET_CHECKSUM=1 (or
// Options.Checksum) turns payload checksums on at both ends of the
// provider's connections: a listener with it on refuses a transfer from a
// connection without it (ErrInvalidUsage naming the setting) and takes
// one from a connection with it. A setting read and then ignored
// anywhere between the environment and the frames fails this.
func TestChecksumSettingReachesTheWire(t *testing.T) {
	t.Cleanup(func() { env.Reload() })
	t.Setenv("GCCL_SOCKET_CHECKSUM", "1")
	env.Reload()
	on := New(Options{IfName: "lo"})
	t.Setenv("GCCL_SOCKET_CHECKSUM", "")
	env.Reload()
	off := New(Options{IfName: "lo"})
	require.True(t, New(Options{IfName: "lo", Checksum: true}).connOptions(network.Config{}).Checksum)

	err := transferOnce(t, on, off)
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	require.Contains(t, err.Error(), "GCCL_SOCKET_CHECKSUM")
	require.NoError(t, transferOnce(t, on, on))
	require.NoError(t, transferOnce(t, off, off))
}

// transferOnce connects a sender of provider send to a listener of recv
// and moves one small transfer: the receive's error.
func transferOnce(t *testing.T, recv, send *Provider) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := network.Config{CommID: [16]byte{1}, Secret: [16]byte{2}, Timeout: 10 * time.Second}
	ln, err := recv.Listen(0, cfg)
	require.NoError(t, err)
	defer ln.Close()
	cfg.Rank = 1
	s, err := send.Connect(ctx, 0, ln.Handle(), cfg, 0)
	require.NoError(t, err)
	defer s.Close()
	r, err := ln.Accept(ctx, network.Peer{Rank: 1})
	require.NoError(t, err)
	defer r.Close()
	sb, rb := []byte("ten bytes!"), make([]byte, 10)
	sm, err := s.Register(network.HostRegion(sb))
	require.NoError(t, err)
	rm, err := r.Register(network.HostRegion(rb))
	require.NoError(t, err)
	rq, err := r.Irecv(network.HostRegion(rb), rm, 0)
	require.NoError(t, err)
	sq, err := s.Isend(network.HostRegion(sb), sm, 0)
	require.NoError(t, err)
	_, err = rq.(network.Waiter).Wait(ctx)
	if err == nil {
		require.Equal(t, sb, rb)
		_, err = sq.(network.Waiter).Wait(ctx)
	}
	return err
}
