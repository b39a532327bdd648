package socket_test

import (
	"testing"

	"github.com/gccl/gccl/internal/leakcheck"
	"github.com/gccl/gccl/transport/network"
	"github.com/gccl/gccl/transport/network/networktest"
	"github.com/gccl/gccl/transport/network/socket"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// TestConformance runs the provider suite with the default layout and
// with one and several sockets per helper goroutine.
func TestConformance(t *testing.T) {
	for _, o := range []socket.Options{
		{IfName: "lo"},
		{IfName: "lo", Threads: 1, SocksPerThread: 1},
		{IfName: "lo", Threads: 2, SocksPerThread: 3},
	} {
		t.Run(socket.New(o).Layout(), func(t *testing.T) {
			networktest.Run(t, func() network.Provider { return socket.New(o) })
		})
	}
}
