package testbed

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/gccl/gccl/internal/wait"
)

// lockGateways serialises, between the beds of one machine, the choice of
// a gateway's subnet and the gateway's creation: two gateways with the
// same address in this namespace would steal each other's traffic. The
// wait is bounded.
func lockGateways(stateDir string) (unlock func(), err error) {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, fmt.Errorf("testbed: state directory: %w", err)
	}
	f, err := os.Open(stateDir) // the lock is the directory's: no file left behind
	if err != nil {
		return nil, fmt.Errorf("testbed: gateway lock: %w", err)
	}
	poll := wait.Poller{Deadline: time.Now().Add(30 * time.Second), What: "the gateway lock " + f.Name(), MaxSleep: 10 * time.Millisecond}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("testbed: gateway lock: %w", err)
		}
		if perr := poll.Pause(); perr != nil {
			f.Close()
			return nil, fmt.Errorf("testbed: another bed holds the gateway lock too long: %w", perr)
		}
	}
}

// subnetInUse reports whether an address of this namespace lies in p.
func subnetInUse(p netip.Prefix) (bool, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false, fmt.Errorf("testbed: listing this namespace's addresses: %w", err)
	}
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok {
			if x, ok := netip.AddrFromSlice(ip.IP); ok && p.Contains(x.Unmap()) {
				return true, nil
			}
		}
	}
	return false, nil
}

// gatewaySubnet returns the subnet of a bed with a gateway: cfg.Subnet
// when given (an error if this namespace already uses it), else the first
// of 10.77.0.0/24, 10.77.1.0/24, ... that it does not use.
func gatewaySubnet(cfg Config, auto bool) (netip.Prefix, error) {
	if !auto {
		used, err := subnetInUse(cfg.Subnet)
		if err == nil && used {
			err = fmt.Errorf("testbed: subnet %v is in use in this namespace (another bed's gateway?); choose another one", cfg.Subnet)
		}
		return cfg.Subnet, err
	}
	base := DefaultSubnet.Addr().As4()
	for k := range 256 {
		base[2] = byte(k)
		p := netip.PrefixFrom(netip.AddrFrom4(base), 24)
		used, err := subnetInUse(p)
		if err != nil || !used {
			return p, err
		}
	}
	return netip.Prefix{}, fmt.Errorf("testbed: every subnet 10.77.0-255.0/24 is in use in this namespace")
}
