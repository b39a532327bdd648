package net

import (
	gonet "net"

	"github.com/gccl/gccl/internal/netif"
)

// ListenIP returns the address to listen on, chosen by internal/netif. With
// spec empty: the first interface that is up and not loopback, else
// loopback. Otherwise the first interface that is up, matches spec
// (GCCL_SOCKET_IFNAME syntax) and has an address; IPv4 is preferred.
func ListenIP(spec string) (gonet.IP, error) {
	ip, err := netif.ListenAddr(spec)
	if err != nil {
		return nil, err
	}
	return gonet.IP(ip.AsSlice()), nil
}
