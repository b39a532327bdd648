package netif

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/gccl/gccl"
)

// Filter is a parsed GCCL_SOCKET_IFNAME: comma-separated name prefixes,
// "=name" for exact names, and a leading "^" that turns the list into
// exclusions (NCCL's syntax).
type Filter struct {
	exclude bool
	exact   bool
	names   []string
}

// ParseFilter parses a GCCL_SOCKET_IFNAME value; blanks around names are ignored.
func ParseFilter(spec string) Filter {
	var f Filter
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

// Match reports whether the filter allows the interface called name.
func (f Filter) Match(name string) bool {
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

// ListenAddr chooses the address to listen on. With spec empty (or blank):
// the first up non-loopback interface with a usable address, else loopback.
// Otherwise the first up interface with a usable address that spec
// (GCCL_SOCKET_IFNAME syntax) allows; none is an InvalidArgument error that
// names the interfaces that are up.
//
// A successful choice is kept for cacheTTL: listing the interfaces is a
// netlink dump, and hundreds of ranks initialising in one process would
// each make it (twice: bootstrap and transport); a later init still sees
// interfaces that changed.
func ListenAddr(spec string) (netip.Addr, error) {
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if c, ok := cache[spec]; ok && time.Since(c.at) < cacheTTL {
		return c.ip, nil
	}
	ip, err := chooseAddr(spec)
	if err == nil {
		cache[spec] = cached{ip: ip, at: time.Now()}
	}
	return ip, err
}

const cacheTTL = time.Second

type cached struct {
	ip netip.Addr
	at time.Time
}

var (
	cacheMu sync.Mutex
	cache   = map[string]cached{}
)

func chooseAddr(spec string) (netip.Addr, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return netip.Addr{}, gccl.Errorf(gccl.SystemError, "GCCL_SOCKET_IFNAME", "listing network interfaces: %w", err)
	}
	filtered := strings.TrimSpace(spec) != ""
	filter := ParseFilter(spec)
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
		switch {
		case !ok || (filtered && !filter.Match(ifc.Name)):
		case filtered || ifc.Flags&net.FlagLoopback == 0:
			return ip, nil
		case !loop.IsValid():
			loop = ip
		}
	}
	if loop.IsValid() {
		return loop, nil
	}
	if !filtered {
		return netip.Addr{}, gccl.Errorf(gccl.SystemError, "GCCL_SOCKET_IFNAME",
			"no network interface is up with a usable address (up: %s)", strings.Join(seen, ", "))
	}
	return netip.Addr{}, gccl.Errorf(gccl.InvalidArgument, "GCCL_SOCKET_IFNAME",
		"no interface that is up with a usable address matches %q (up: %s); set GCCL_SOCKET_IFNAME to one of them",
		spec, strings.Join(seen, ", "))
}
