package socket

import (
	"encoding/binary"
	gonet "net"
	"net/netip"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/transport/network"
)

// handleVersion is the first byte of a handle: then the IP address's
// length (4 or 16), the address and the port, big-endian.
const handleVersion = 1

func encodeHandle(a *gonet.TCPAddr) network.Handle {
	ip := a.AddrPort().Addr().Unmap()
	b := append([]byte{handleVersion, byte(ip.BitLen() / 8)}, ip.AsSlice()...)
	return binary.BigEndian.AppendUint16(b, uint16(a.Port))
}

func decodeHandle(h network.Handle) (netip.AddrPort, error) {
	bad := func(why string) (netip.AddrPort, error) {
		return netip.AddrPort{}, gccl.Errorf(gccl.InvalidArgument, "Handle", "not a socket provider handle (%s): do all ranks run the same gccl and GCCL_NET?", why)
	}
	if len(h) < 2 || h[0] != handleVersion {
		return bad("version")
	}
	n := int(h[1])
	if n != 4 && n != 16 || len(h) != 2+n+2 {
		return bad("length")
	}
	ip, _ := netip.AddrFromSlice(h[2 : 2+n])
	port := binary.BigEndian.Uint16(h[2+n:])
	if port == 0 || ip.IsUnspecified() {
		return bad("address")
	}
	return netip.AddrPortFrom(ip, port), nil
}
