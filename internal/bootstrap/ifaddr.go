package bootstrap

import (
	"net"
	"net/netip"
	"strings"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
)

// ifaceFilter is a parsed GCCL_SOCKET_IFNAME: comma-separated name prefixes,
// "=name" for exact names, and a leading "^" that turns the list into
// exclusions (NCCL's syntax).
type ifaceFilter struct {
	exclude bool
	exact   bool
	names   []string
}

func parseIfname(spec string) ifaceFilter {
	var f ifaceFilter
	spec = strings.TrimSpace(spec)
	if f.exclude = strings.HasPrefix(spec, "^"); f.exclude {
		spec = spec[1:]
	}
	if f.exact = strings.HasPrefix(spec, "="); f.exact {
		spec = spec[1:]
	}
	for _, n := range strings.Split(spec, ",") {
		if n = strings.TrimSpace(n); n != "" {
			f.names = append(f.names, n)
		}
	}
	return f
}

func (f ifaceFilter) match(name string) bool {
	hit := false
	for _, n := range f.names {
		if name == n || (!f.exact && strings.HasPrefix(name, n)) {
			hit = true
			break
		}
	}
	return hit != f.exclude
}

// usableAddr returns the interface's first IPv4 address, else its first
// global IPv6 address (link-local ones need a zone a unique ID cannot carry).
func usableAddr(addrs []net.Addr) (netip.Addr, bool) {
	var v6 netip.Addr
	for _, a := range addrs {
		pfx, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		ip := pfx.Addr().Unmap()
		switch {
		case ip.Is4():
			return ip, true
		case !v6.IsValid() && !ip.IsLinkLocalUnicast():
			v6 = ip
		}
	}
	return v6, v6.IsValid()
}

// ListenIP chooses the address to listen on: the first up interface that
// GCCL_SOCKET_IFNAME allows; without the variable, the first up non-loopback
// interface, else loopback.
func ListenIP() (netip.Addr, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return netip.Addr{}, gccl.Errorf(gccl.SystemError, "network", "listing network interfaces: %w", err)
	}
	spec := env.Get().SocketIfname
	filter := parseIfname(spec)
	var loop netip.Addr
	var seen []string
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 {
			continue
		}
		seen = append(seen, ifc.Name)
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		ip, ok := usableAddr(addrs)
		if !ok {
			continue
		}
		if spec != "" {
			if filter.match(ifc.Name) {
				return ip, nil
			}
			continue
		}
		if ifc.Flags&net.FlagLoopback != 0 {
			if !loop.IsValid() {
				loop = ip
			}
			continue
		}
		return ip, nil
	}
	if loop.IsValid() {
		return loop, nil
	}
	return netip.Addr{}, gccl.Errorf(gccl.InvalidArgument, "GCCL_SOCKET_IFNAME",
		"no interface that is up with a usable address matches %q (up: %s); set GCCL_SOCKET_IFNAME to one of them",
		spec, strings.Join(seen, ", "))
}
