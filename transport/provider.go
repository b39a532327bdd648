package transport

import (
	"slices"
	"strings"
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/transport/network"
	"github.com/gccl/gccl/transport/network/socket"
	"github.com/gccl/gccl/transport/network/ucx"
)

// netAuto is the GCCL_NET value that lets the table choose.
const netAuto = "auto"

// providerRow is one network provider gccl can run over.
type providerRow struct {
	name string
	make func(cfg Config) network.Provider
}

// providers is the table of network providers, in the order GCCL_NET=auto
// considers them: auto takes the first whose Devices report an RDMA
// device (unless GCCL_IB_DISABLE), else the socket provider, which works
// wherever TCP does. A provider is one row here.
var providers = []providerRow{
	{"ucx", func(Config) network.Provider { return ucxProvider() }},
	{socket.Name, func(cfg Config) network.Provider {
		return socket.New(socket.Options{IfName: cfg.IfName, Threads: cfg.NetThreads, SocksPerThread: cfg.NetSocksPerThread, Checksum: cfg.NetChecksum})
	}},
}

// providerNames lists the table's names, for errors.
func providerNames() string {
	names := []string{netAuto}
	for _, p := range providers {
		names = append(names, p.name)
	}
	return strings.Join(names, ", ")
}

// choice is a provider and the devices an endpoint may use: cands index
// devs, in the provider's order (never empty); explicit names the setting
// that chose them, when the user did (the first is then taken).
type choice struct {
	prov     network.Provider
	devs     []network.Properties
	cands    []int
	explicit string
}

// selectProvider returns the provider cfg.NetName names (auto: see
// providers) and the devices it offers; place picks one.
func selectProvider(cfg Config) (choice, error) {
	name := strings.ToLower(strings.TrimSpace(cfg.NetName))
	if name == netAuto || name == "" {
		return autoProvider(cfg)
	}
	i := slices.IndexFunc(providers, func(p providerRow) bool { return p.name == name })
	if i < 0 {
		return choice{}, gccl.Errorf(gccl.InvalidArgument, "GCCL_NET", "unknown network provider %q: use one of %s", cfg.NetName, providerNames())
	}
	p := providers[i].make(cfg)
	devs, err := p.Devices()
	if err != nil {
		return choice{}, gccl.Errorf(gccl.Code(err), "GCCL_NET", "network provider %q cannot run here: %w; fix that, or choose another provider with GCCL_NET (%s)", name, err, providerNames())
	}
	if len(devs) == 0 {
		return choice{}, gccl.Errorf(gccl.SystemError, "GCCL_NET", "network provider %q has no device here; choose another with GCCL_NET (%s)", name, providerNames())
	}
	c := choice{prov: p, devs: devs}
	for i := range devs {
		c.cands = append(c.cands, i)
	}
	if name == socket.Name && cfg.IfName != "" {
		c.explicit = "GCCL_SOCKET_IFNAME"
	}
	return c, nil
}

// autoProvider takes the first provider with an RDMA device, unless
// GCCL_IB_DISABLE, its RDMA devices the candidates; else the socket
// provider.
func autoProvider(cfg Config) (choice, error) {
	if !cfg.IBDisable {
		for _, row := range providers {
			if row.name == socket.Name {
				continue
			}
			p := row.make(cfg)
			devs, err := p.Devices()
			if err != nil {
				env.Logger("NET").Debug("network provider not usable", "provider", row.name, "err", err)
				continue
			}
			c := choice{prov: p, devs: devs}
			for i, d := range devs {
				if d.RDMA {
					c.cands = append(c.cands, i)
				}
			}
			if len(c.cands) > 0 {
				return c, nil
			}
		}
	}
	cfg.NetName = socket.Name
	return selectProvider(cfg)
}

// ucxProvider is the process's one ucx provider: its devices are found once
// (a UCP context per query), whatever the number of endpoints.
var ucxProvider = sync.OnceValue(func() network.Provider { return ucx.New() })
