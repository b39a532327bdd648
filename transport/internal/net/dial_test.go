package net

import (
	"context"
	gonet "net"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/require"
)

// TestDialDeadPeerIsRemote: dialling an address whose listener is gone (a
// peer that died after init) is a remote error, not a system error.
func TestDialDeadPeerIsRemote(t *testing.T) {
	gone, err := gonet.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := gone.Addr().String()
	require.NoError(t, gone.Close())

	l, err := Listen(gonet.IPv4(127, 0, 0, 1), Identity{}, 0, 2*time.Second)
	require.NoError(t, err)
	defer l.Close()
	_, err = l.Dial(context.Background(), addr, 0, 1)
	require.ErrorIs(t, err, gccl.ErrRemote)
	require.Contains(t, err.Error(), addr)
}
