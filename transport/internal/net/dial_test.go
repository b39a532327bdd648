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

	_, err = Dialer{Timeout: 2 * time.Second}.Dial(context.Background(), addr, 0, 1)
	require.ErrorIs(t, err, gccl.ErrRemote)
	require.Contains(t, err.Error(), addr)
}
