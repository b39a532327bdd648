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

// The UCX settings of a TCP device's context, unless the environment sets
// them (see deviceSettings). Every transfer the transport makes at its
// defaults (a message's first, at most 64 KiB and its header; the 512 KiB
// chunks of longer ones; the GPU proxy's 512 KiB slots) then goes eagerly
// and in one piece:
//
//   - tcpEagerLimit (UCX_RNDV_THRESH): a transfer below it goes eager,
//     its bytes sent at once. UCX's rendezvous over TCP (UCX's threshold
//     is about 20 KiB) costs a transfer the receiver's answer to its
//     request, then a put and its acknowledgement before the send
//     completes, each a progress wake-up on one side or the other.
//   - tcpSegment (UCX_TCP_RX_SEG_SIZE): the largest piece of an eager
//     transfer (UCX's 64 KiB cuts the first transfer, 64 KiB and a
//     48-byte header, into 65512 bytes and a 72-byte tail, each its own
//     system call and receive event, and a 512 KiB chunk into nine).
//     Each receive buffer of the device's workers is twice it, allocated
//     as used.
//
// All-reduce across 2 simulated hosts × 1 rank over TCP with both, against
// 128 KiB and UCX's segment (docs/perf-notes.md, issue 19; 2 CPUs): CPU
// time per operation -14 % at 64 KiB, -17 % at 256 KiB, -41 % at 1 MiB,
// -32 % at 4 MiB; context switches per operation at 1 MiB 63 → 20.
const (
	tcpEagerLimit = "1m"
	tcpSegment    = "1m"
)

// deviceSettings are the UCX settings of dev's context: UCX_NET_DEVICES
// naming dev only, and on TCP the eager limit and segment size, each
// unless the environment sets it (the segment also where it sets
// UCX_TCP_TX_SEG_SIZE, which UCX wants no larger). The segment is a
// setting of UCX's tcp transport, which a context takes by its name
// there (RX_SEG_SIZE; UCX_TCP_RX_SEG_SIZE in the environment), and only
// from UCX 1.12 on: it is optional.
func deviceSettings(dev device) []ucx.Setting {
	s := []ucx.Setting{{Name: "NET_DEVICES", Value: dev.props.Name}}
	if !dev.ib {
		s = append(s, ucx.Setting{Name: "RNDV_THRESH", Value: tcpEagerLimit}.UnlessSet()...)
		s = append(s, ucx.Setting{Name: "?RX_SEG_SIZE", Value: tcpSegment}.UnlessSet("TCP_RX_SEG_SIZE", "TCP_TX_SEG_SIZE")...)
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
