package socket

import (
	"context"
	gonet "net"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/transport/network"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHandleRoundTripAndRejects(t *testing.T) {
	for _, a := range []*gonet.TCPAddr{{IP: gonet.IP{10, 1, 2, 3}, Port: 4567}, {IP: gonet.ParseIP("2001:db8::7"), Port: 80}} {
		h := encodeHandle(a)
		got, err := decodeHandle(h)
		require.NoError(t, err)
		assert.Equal(t, a.AddrPort().String(), got.String())
		for n := range len(h) {
			_, err := decodeHandle(h[:n])
			require.ErrorIs(t, err, gccl.ErrInvalidArgument, "truncated to %d", n)
		}
	}
	for _, bad := range []network.Handle{{2, 4, 1, 2, 3, 4, 0, 1}, {1, 5, 1, 2, 3, 4, 5, 0, 1}, {1, 4, 1, 2, 3, 4, 0, 0}, {1, 4, 0, 0, 0, 0, 0, 1}} {
		_, err := decodeHandle(bad)
		require.ErrorIs(t, err, gccl.ErrInvalidArgument, "%v", bad)
	}
}

// TestOptionsAndDevices: the layout comes from GCCL_SOCKET_NTHREADS and
// GCCL_NSOCKS_PERTHREAD (NCCL names too) unless Options set it; loopback
// reports no speed and no PCI path; too many sockets is an error at
// Listen and Connect; an out-of-range device too.
func TestOptionsAndDevices(t *testing.T) {
	t.Cleanup(func() { env.Reload() })
	t.Setenv("NCCL_SOCKET_NTHREADS", "3")
	t.Setenv("GCCL_NSOCKS_PERTHREAD", "2")
	env.Reload()
	p := New(Options{IfName: "lo"})
	assert.Equal(t, "3x2", p.Layout())
	assert.Equal(t, 6, p.Sockets())
	assert.Equal(t, "1x2", New(Options{IfName: "lo", Threads: 1}).Layout())
	t.Setenv("NCCL_SOCKET_NTHREADS", "")
	t.Setenv("GCCL_NSOCKS_PERTHREAD", "")
	env.Reload()
	assert.Equal(t, "2x1", New(Options{IfName: "lo"}).Layout())

	devs, err := p.Devices()
	require.NoError(t, err)
	require.Len(t, devs, 1)
	assert.Equal(t, network.Properties{Name: "lo", Memory: network.MemHost, MaxRecvs: 1, InFlight: 32, Transport: "tcp"}, devs[0])

	big := New(Options{IfName: "lo", Threads: 8, SocksPerThread: 8})
	_, err = big.Listen(0, network.Config{})
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "GCCL_SOCKET_NTHREADS")
	_, err = big.Connect(context.Background(), 0, network.Handle{1}, network.Config{}, 0)
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
	_, err = p.Connect(context.Background(), 1, network.Handle{1}, network.Config{}, 0)
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)

	_, err = New(Options{IfName: "=no-such-interface"}).Devices()
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
}
