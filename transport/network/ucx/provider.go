package ucx

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/ucx"
	"github.com/gccl/gccl/transport/network"
)

// InFlight is how many requests a connection may have in flight.
const InFlight = 256

// Provider is the ucx network provider. Its zero value is ready; New is
// the same.
type Provider struct {
	mu      sync.Mutex
	devs    []device
	ctxs    map[int]*devContext
	sysRoot string // "" = "/"; tests point it at a fake sysfs
	// flushHost makes Flush read back host regions as it does CUDA ones,
	// so that the GPUDirect flush's path runs on machines with no GPU.
	flushHost bool
}

var _ network.Provider = (*Provider)(nil)

// New returns a ucx provider.
func New() *Provider { return &Provider{} }

// Name is "ucx".
func (*Provider) Name() string { return "ucx" }

// device is one network device UCX reaches and the transports on it.
type device struct {
	props network.Properties
	ib    bool
}

// Devices lists the network devices UCX's transports reach (UCX_TLS and
// UCX_NET_DEVICES apply): InfiniBand/RoCE devices first (none with
// GCCL_IB_DISABLE=1), then TCP interfaces by speed, loopback last.
func (p *Provider) Devices() ([]network.Properties, error) {
	devs, err := p.devices()
	if err != nil {
		return nil, err
	}
	out := make([]network.Properties, len(devs))
	for i, d := range devs {
		out[i] = d.props
	}
	return out, nil
}

func (p *Provider) devices() ([]device, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.devs != nil {
		return p.devs, nil
	}
	c, err := ucx.NewContext()
	if err != nil {
		return nil, err
	}
	res, cuda := c.Resources(), c.CUDA()
	c.Close()
	devs := p.group(res, cuda, env.Get().IBDisable)
	if len(devs) == 0 {
		return nil, gccl.Errorf(gccl.SystemError, "ucx", "UCX %s found no network device (its transports: %v; IB disabled: %v); check UCX_TLS and UCX_NET_DEVICES, or use GCCL_NET=socket",
			ucx.Version(), res, env.Get().IBDisable)
	}
	p.devs = devs
	return devs, nil
}

// IBTransport reports whether a UCX transport runs over InfiniBand or
// RoCE (verbs): rc, ud, dc in their verbs and mlx5 flavours.
func IBTransport(tl string) bool {
	for _, pre := range []string{"rc", "ud", "dc"} {
		if strings.HasPrefix(tl, pre) {
			return true
		}
	}
	return false
}

// group turns UCX's resources into network devices: a device is network
// when tcp or a verbs transport runs on it (shared memory, self and CUDA
// copies run on pseudo-devices that reach only this host).
func (p *Provider) group(res []ucx.Resource, cuda bool, ibDisable bool) []device {
	byName := map[string]*device{}
	var names []string
	for _, r := range res {
		ib := IBTransport(r.Transport)
		if (!ib && r.Transport != "tcp") || (ib && ibDisable) {
			continue
		}
		d := byName[r.Device]
		if d == nil {
			mem := network.MemHost
			if cuda {
				mem |= network.MemCUDA
			}
			d = &device{ib: ib, props: network.Properties{Name: r.Device, Memory: mem, MaxRecvs: 1, InFlight: InFlight, RDMA: ib}}
			d.props.PCIPath, d.props.Speed = p.sysfs(r.Device, ib)
			byName[r.Device] = d
			names = append(names, r.Device)
		}
		if d.props.Transport != "" {
			d.props.Transport += ","
		}
		d.props.Transport += r.Transport
	}
	out := make([]device, 0, len(names))
	for _, n := range names {
		out = append(out, *byName[n])
	}
	rank := func(d device) int {
		switch {
		case d.ib:
			return 0
		case d.props.Name == "lo":
			return 2
		}
		return 1
	}
	slices.SortStableFunc(out, func(a, b device) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(b.props.Speed, a.props.Speed))
	})
	return out
}

// sysfs finds a device's PCI path and link speed (Mbit/s): a netdev's
// /sys/class/net/<dev>/speed, an IB port's /sys/class/infiniband/<dev>/
// ports/<port>/rate ("100 Gb/sec (4X EDR)"); 0 and "" when unknown.
func (p *Provider) sysfs(name string, ib bool) (pci string, speed int) {
	root := cmp.Or(p.sysRoot, "/")
	var dir string
	if ib {
		dev, port, _ := strings.Cut(name, ":")
		dir = filepath.Join(root, "sys/class/infiniband", dev)
		if b, err := os.ReadFile(filepath.Join(dir, "ports", cmp.Or(port, "1"), "rate")); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 {
				if g, err := strconv.ParseFloat(f[0], 64); err == nil {
					speed = int(g * 1000)
				}
			}
		}
	} else {
		dir = filepath.Join(root, "sys/class/net", name)
		if b, err := os.ReadFile(filepath.Join(dir, "speed")); err == nil {
			if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v > 0 {
				speed = v
			}
		}
	}
	if real, err := filepath.EvalSymlinks(filepath.Join(dir, "device")); err == nil && strings.Contains(real, "/pci") {
		pci = strings.TrimPrefix(real, filepath.Clean(root))
		if !strings.HasPrefix(pci, "/") {
			pci = "/" + pci
		}
	}
	return pci, speed
}

// devContext is the UCX context of one device, shared by the provider's
// listeners and connections on it and released with the last of them.
type devContext struct {
	ctx  *ucx.Context
	dev  device
	refs int
}

// acquire returns device dev's context, creating it restricted to the
// device (UCX_NET_DEVICES; shared memory and self stay available for
// peers on this host).
func (p *Provider) acquire(dev int) (*devContext, error) {
	devs, err := p.devices()
	if err != nil {
		return nil, err
	}
	if dev < 0 || dev >= len(devs) {
		return nil, gccl.Errorf(gccl.InvalidArgument, "dev", "device %d out of range: ucx has %d", dev, len(devs))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if dc := p.ctxs[dev]; dc != nil {
		dc.refs++
		return dc, nil
	}
	c, err := ucx.NewContext(deviceSettings(devs[dev])...)
	if err != nil {
		return nil, err
	}
	if env.Get().IBDisable {
		for _, r := range c.Resources() {
			if IBTransport(r.Transport) {
				c.Close()
				return nil, gccl.Errorf(gccl.InternalError, "GCCL_IB_DISABLE", "UCX opened %s on %s although only %s was allowed", r.Transport, r.Device, devs[dev].props.Name)
			}
		}
	}
	if p.ctxs == nil {
		p.ctxs = map[int]*devContext{}
	}
	dc := &devContext{ctx: c, dev: devs[dev], refs: 1}
	p.ctxs[dev] = dc
	return dc, nil
}

// tcpEagerLimit is UCX_RNDV_THRESH on a device without verbs (TCP), unless
// the environment sets it: a transfer up to it goes eager, in one
// message. The transport's first transfer of a message (at most 64 KiB
// and its header) then never takes UCX's rendezvous, whose extra round
// trips over TCP cost each side more progress wake-ups than the copy
// they save (a 64 KiB ping-pong over loopback with UCX 1.13: 126-202 µs
// a way with UCX's own threshold, 84-103 µs with this one; streams of
// 64 KiB transfers 1.4-2x the bandwidth); the 512 KiB chunks of long
// messages keep it.
const tcpEagerLimit = "128k"

// deviceSettings are the UCX settings of dev's context: UCX_NET_DEVICES
// naming dev only, and on TCP the eager limit.
func deviceSettings(dev device) []ucx.Setting {
	s := []ucx.Setting{{Name: "NET_DEVICES", Value: dev.props.Name}}
	if !dev.ib {
		s = append(s, ucx.Setting{Name: "RNDV_THRESH", Value: tcpEagerLimit}.UnlessSet()...)
	}
	return s
}

func (p *Provider) retain(dc *devContext) {
	p.mu.Lock()
	defer p.mu.Unlock()
	dc.refs++
}

func (p *Provider) release(dc *devContext) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if dc.refs--; dc.refs == 0 {
		for i, c := range p.ctxs {
			if c == dc {
				delete(p.ctxs, i)
			}
		}
		dc.ctx.Close()
	}
}

// timeout is cfg's handshake deadline, GCCL_TIMEOUT when it has none.
func timeout(cfg network.Config) time.Duration {
	if cfg.Timeout > 0 {
		return cfg.Timeout
	}
	return env.Get().Timeout
}
