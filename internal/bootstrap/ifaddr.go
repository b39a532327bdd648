package bootstrap

import (
	"net/netip"

	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/netif"
)

// ListenIP chooses the address to listen on (internal/netif): the first up
// interface that GCCL_SOCKET_IFNAME allows; without the variable, the first
// up non-loopback interface, else loopback.
func ListenIP() (netip.Addr, error) {
	return netif.ListenAddr(env.Get().SocketIfname)
}
