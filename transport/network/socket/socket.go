package socket

import (
	"context"
	"strconv"
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/netif"
	tnet "github.com/gccl/gccl/transport/internal/net"
	"github.com/gccl/gccl/transport/network"
)

// Name is the provider's name in GCCL_NET.
const Name = "socket"

// Defaults of Options not set by the environment either.
const (
	DefaultThreads        = 2
	DefaultSocksPerThread = 1
)

// Options configure the provider. Zero fields take the environment's
// value, else the default.
type Options struct {
	// IfName selects the devices (GCCL_SOCKET_IFNAME syntax); "" =
	// GCCL_SOCKET_IFNAME (NCCL_SOCKET_IFNAME).
	IfName string
	// Threads is the helper goroutines per connection; 0 =
	// GCCL_SOCKET_NTHREADS (NCCL_SOCKET_NTHREADS), else DefaultThreads.
	Threads int
	// SocksPerThread is the data sockets each helper drives; 0 =
	// GCCL_NSOCKS_PERTHREAD (NCCL_NSOCKS_PERTHREAD), else DefaultSocksPerThread.
	SocksPerThread int
	// Checksum puts a CRC32C of every payload in its frame header and
	// checks it on receipt (and refuses payloads sent without one); false
	// = GCCL_SOCKET_CHECKSUM, else off: payloads rely on TCP's checksum.
	Checksum bool
}

// Provider is the socket provider (network.Provider).
type Provider struct {
	o Options

	once sync.Once
	devs []netif.Interface
	err  error
}

// New returns the socket provider with o's settings (see Options).
func New(o Options) *Provider {
	e := env.Get()
	if o.IfName == "" {
		o.IfName = e.SocketIfname
	}
	if o.Threads == 0 {
		o.Threads = e.SocketNThreads
	}
	if o.SocksPerThread == 0 {
		o.SocksPerThread = e.NSocksPerThread
	}
	o.Checksum = o.Checksum || e.SocketChecksum
	if o.Threads <= 0 {
		o.Threads = DefaultThreads
	}
	if o.SocksPerThread <= 0 {
		o.SocksPerThread = DefaultSocksPerThread
	}
	return &Provider{o: o}
}

// Name is "socket".
func (p *Provider) Name() string { return Name }

// Sockets is the data sockets of each connection, helper goroutines times
// sockets per helper.
func (p *Provider) Sockets() int { return p.o.Threads * p.o.SocksPerThread }

// check validates the socket counts.
func (p *Provider) check() error {
	if n := p.Sockets(); n+1 > tnet.MaxSockets {
		return gccl.Errorf(gccl.InvalidArgument, "GCCL_SOCKET_NTHREADS", "%d helper goroutines × %d sockets each = %d data sockets per connection, at most %d: lower GCCL_SOCKET_NTHREADS or GCCL_NSOCKS_PERTHREAD", p.o.Threads, p.o.SocksPerThread, n, tnet.MaxSockets-1)
	}
	return nil
}

func (p *Provider) interfaces() ([]netif.Interface, error) {
	p.once.Do(func() { p.devs, p.err = netif.Interfaces(p.o.IfName) })
	return p.devs, p.err
}

// Devices lists the interfaces GCCL_SOCKET_IFNAME allows, best first.
func (p *Provider) Devices() ([]network.Properties, error) {
	ifs, err := p.interfaces()
	if err != nil {
		return nil, err
	}
	props := make([]network.Properties, len(ifs))
	for i, ifc := range ifs {
		props[i] = network.Properties{
			Name:      ifc.Name,
			PCIPath:   ifc.PCIPath,
			Speed:     ifc.Speed,
			Memory:    network.MemHost,
			MaxRecvs:  1,
			InFlight:  tnet.InFlight,
			Transport: "tcp",
		}
	}
	return props, nil
}

func (p *Provider) device(dev int) (netif.Interface, error) {
	ifs, err := p.interfaces()
	if err != nil {
		return netif.Interface{}, err
	}
	if dev < 0 || dev >= len(ifs) {
		return netif.Interface{}, gccl.Errorf(gccl.InvalidArgument, "dev", "device %d out of range: the socket provider has %d (GCCL_SOCKET_IFNAME allows %d interfaces)", dev, len(ifs), len(ifs))
	}
	return ifs[dev], nil
}

// Listen opens a TCP listener on device dev's address.
func (p *Provider) Listen(dev int, cfg network.Config) (network.Listener, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	ifc, err := p.device(dev)
	if err != nil {
		return nil, err
	}
	ln, err := tnet.Listen(ifc.Addr.AsSlice(), tnet.Identity{CommID: cfg.CommID, Secret: cfg.Secret}, cfg.Rank, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	return &listener{ln: ln, h: encodeHandle(ln.TCPAddr()), opts: p.connOptions(cfg)}, nil
}

// Connect dials the listener of handle h with a control socket and
// Sockets() data sockets, each proving cfg's secret.
func (p *Provider) Connect(ctx context.Context, dev int, h network.Handle, cfg network.Config, channel int) (network.SendComm, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if _, err := p.device(dev); err != nil {
		return nil, err
	}
	addr, err := decodeHandle(h)
	if err != nil {
		return nil, err
	}
	d := tnet.Dialer{ID: tnet.Identity{CommID: cfg.CommID, Secret: cfg.Secret}, Rank: cfg.Rank, Timeout: cfg.Timeout}
	socks, err := d.Dial(ctx, addr.String(), channel, 1+p.Sockets())
	if err != nil {
		return nil, err
	}
	s, err := tnet.NewSendComm(socks, p.connOptions(cfg))
	if err != nil {
		closeAll(socks)
		return nil, err
	}
	return s, nil
}

var (
	_ network.Provider = (*Provider)(nil)
	_ network.SendComm = (*tnet.SendComm)(nil)
	_ network.RecvComm = (*tnet.RecvComm)(nil)
	_ network.Refuser  = (*tnet.SendComm)(nil)
	_ network.Failer   = (*tnet.SendComm)(nil)
	_ network.Failer   = (*tnet.RecvComm)(nil)
	_ network.Poller   = (*tnet.RecvComm)(nil)
)

// connOptions are the options of a connection for cfg, both ends alike.
func (p *Provider) connOptions(cfg network.Config) tnet.Options {
	return tnet.Options{Threads: p.o.Threads, Timeout: cfg.Timeout, CPUs: cfg.CPUs, Checksum: p.o.Checksum}
}

// Layout names the connection layout, "2x1": helper goroutines × sockets each.
func (p *Provider) Layout() string {
	return strconv.Itoa(p.o.Threads) + "x" + strconv.Itoa(p.o.SocksPerThread)
}
