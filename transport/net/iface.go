package net

import (
	gonet "net"
	"strings"

	"github.com/gccl/gccl"
)

// ifaceFilter is a parsed GCCL_SOCKET_IFNAME: comma-separated name prefixes,
// "=" before the list for exact names, "^" to exclude the listed names.
type ifaceFilter struct {
	names   []string
	exact   bool
	exclude bool
}

func parseIfaceFilter(spec string) ifaceFilter {
	var f ifaceFilter
	spec = strings.TrimSpace(spec)
	if strings.HasPrefix(spec, "^") {
		f.exclude, spec = true, spec[1:]
	}
	if strings.HasPrefix(spec, "=") {
		f.exact, spec = true, spec[1:]
	}
	for _, n := range strings.Split(spec, ",") {
		if n = strings.TrimSpace(n); n != "" {
			f.names = append(f.names, n)
		}
	}
	return f
}

func (f ifaceFilter) allows(name string) bool {
	hit := false
	for _, n := range f.names {
		if name == n || (!f.exact && strings.HasPrefix(name, n)) {
			hit = true
			break
		}
	}
	return hit != f.exclude
}

// ListenIP returns the address to listen on. With spec empty: the first
// interface that is up and not loopback, else loopback. Otherwise the first
// interface that is up, matches spec (GCCL_SOCKET_IFNAME syntax) and has an
// address; IPv4 is preferred.
func ListenIP(spec string) (gonet.IP, error) {
	ifs, err := gonet.Interfaces()
	if err != nil {
		return nil, gccl.Errorf(gccl.SystemError, "GCCL_SOCKET_IFNAME", "listing network interfaces: %w", err)
	}
	var names []string
	pick := func(ok func(gonet.Interface) bool) gonet.IP {
		for _, ifc := range ifs {
			if ifc.Flags&gonet.FlagUp == 0 || !ok(ifc) {
				continue
			}
			if ip := ifaceIP(ifc); ip != nil {
				return ip
			}
		}
		return nil
	}
	for _, ifc := range ifs {
		names = append(names, ifc.Name)
	}
	if strings.TrimSpace(spec) == "" {
		if ip := pick(func(i gonet.Interface) bool { return i.Flags&gonet.FlagLoopback == 0 }); ip != nil {
			return ip, nil
		}
		if ip := pick(func(gonet.Interface) bool { return true }); ip != nil {
			return ip, nil
		}
		return nil, gccl.Errorf(gccl.SystemError, "GCCL_SOCKET_IFNAME", "no network interface is up with an address")
	}
	f := parseIfaceFilter(spec)
	if ip := pick(func(i gonet.Interface) bool { return f.allows(i.Name) }); ip != nil {
		return ip, nil
	}
	return nil, gccl.Errorf(gccl.InvalidArgument, "GCCL_SOCKET_IFNAME",
		"no interface that is up with an address matches %q; interfaces here: %s", spec, strings.Join(names, ", "))
}

// ifaceIP returns an interface's first IPv4 address, else its first global
// IPv6 address, else nil.
func ifaceIP(ifc gonet.Interface) gonet.IP {
	addrs, err := ifc.Addrs()
	if err != nil {
		return nil
	}
	var v6 gonet.IP
	for _, a := range addrs {
		ipn, ok := a.(*gonet.IPNet)
		if !ok {
			continue
		}
		if v4 := ipn.IP.To4(); v4 != nil {
			return v4
		}
		if v6 == nil && !ipn.IP.IsLinkLocalUnicast() {
			v6 = ipn.IP
		}
	}
	return v6
}
