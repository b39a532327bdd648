package netif

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
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

// Interface is an interface a spec allows: its name, the address to
// listen on, and what sysfs says of it (read with the list, so kept with
// it: hundreds of ranks of one process would each read it).
type Interface struct {
	Name    string
	Addr    netip.Addr
	PCIPath string // its device's path in sysfs, "" for virtual interfaces
	Speed   int    // link speed in Mbit/s, 0 where sysfs reports none
}

// Interfaces lists the interfaces that are up, have a usable address and
// that spec (GCCL_SOCKET_IFNAME syntax) allows, best first: in the order
// the operating system lists them, except that with an empty (or blank)
// spec loopback interfaces come last. None is an InvalidArgument error
// (SystemError with an empty spec) that names the interfaces that are up.
//
// A successful list is kept for cacheTTL: listing the interfaces is a
// netlink dump and reads of sysfs, and hundreds of ranks initialising in one process would
// each make it (twice: bootstrap and transport); a later init still sees
// interfaces that changed.
func Interfaces(spec string) ([]Interface, error) {
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if c, ok := cache[spec]; ok && time.Since(c.at) < cacheTTL {
		return c.ifs, nil
	}
	ifs, err := listInterfaces(spec)
	if err == nil {
		cache[spec] = cached{ifs: ifs, at: time.Now()}
	}
	return ifs, err
}

const cacheTTL = time.Second

type cached struct {
	ifs []Interface
	at  time.Time
}

var (
	cacheMu sync.Mutex
	cache   = map[string]cached{}
)

func listInterfaces(spec string) ([]Interface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, gccl.Errorf(gccl.SystemError, "GCCL_SOCKET_IFNAME", "listing network interfaces: %w", err)
	}
	filtered := strings.TrimSpace(spec) != ""
	filter := ParseFilter(spec)
	var found, loops []Interface
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
			found = append(found, describe(ifc.Name, ip))
		default:
			loops = append(loops, describe(ifc.Name, ip))
		}
	}
	if found = append(found, loops...); len(found) > 0 {
		return found, nil
	}
	if !filtered {
		return nil, gccl.Errorf(gccl.SystemError, "GCCL_SOCKET_IFNAME",
			"no network interface is up with a usable address (up: %s)", strings.Join(seen, ", "))
	}
	return nil, gccl.Errorf(gccl.InvalidArgument, "GCCL_SOCKET_IFNAME",
		"no interface that is up with a usable address matches %q (up: %s); set GCCL_SOCKET_IFNAME to one of them",
		spec, strings.Join(seen, ", "))
}

func describe(name string, ip netip.Addr) Interface {
	return Interface{Name: name, Addr: ip, PCIPath: pciPath(name), Speed: speed(name)}
}

// speed is the link speed sysfs reports in Mbit/s, 0 where it has none
// (loopback, virtual interfaces report -1 or nothing).
func speed(ifname string) int {
	b, err := os.ReadFile(filepath.Join("/sys/class/net", ifname, "speed"))
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// pciPath is the interface's device path in sysfs, "" for virtual ones.
func pciPath(ifname string) string {
	p, err := filepath.EvalSymlinks(filepath.Join("/sys/class/net", ifname, "device"))
	if err != nil || !strings.Contains(p, "/pci") {
		return ""
	}
	return p
}

// ListenAddr chooses the address to listen on: that of the first of
// Interfaces(spec).
func ListenAddr(spec string) (netip.Addr, error) {
	ifs, err := Interfaces(spec)
	if err != nil {
		return netip.Addr{}, err
	}
	return ifs[0].Addr, nil
}
