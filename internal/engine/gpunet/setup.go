package gpunet

import (
	"context"
	"encoding/binary"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/internal/ctlblock"
	"github.com/gccl/gccl/internal/engine/internal/errs"
	"github.com/gccl/gccl/internal/engine/internal/streamjoin"
	"github.com/gccl/gccl/internal/engine/proxy"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/memalloc"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/transport"
	"github.com/gccl/gccl/transport/network"
)

// Defaults of the settings (internal/env: GCCL_NET_BUFFSIZE, GCCL_NET_NCHANNELS).
const (
	// DefaultBuffSize is a FIFO's slots: NCCL_BUFFSIZE's 4 MiB per
	// connection, 8 slots of 512 KiB.
	DefaultBuffSize = kernels.FIFOSlots * proxy.DefaultSlotBytes
	// DefaultChannels is the ring's channels: 4, because one TCP
	// connection is held back by the CPU that serves it. Measured on
	// nvidia-h100-x1 (2 simulated hosts, socket provider, all-reduce 16–256
	// MiB, docs/perf-notes.md): 2 channels 2.8–3.0 GB/s busbw, 4 channels
	// 3.9–4.6 eager and 4.5–4.9 captured, against 2.6–3.6 GB/s for one
	// plain TCP stream. It is a cap: an operation takes the channels
	// gpuplan's ring model gives its size (gpuplan.Ring.Channels), so
	// small ones take one.
	DefaultChannels = 4
	// p2pChannel is the network channel of point-to-point connections;
	// the ring's are 0..RingMaxChannels-1.
	p2pChannel = kernels.RingMaxChannels
)

// Config is what the backend needs beyond the engine's Setup.
type Config struct {
	// Transport is the endpoint the FIFOs' connections go over: its
	// CommID and Secret (the same on every rank) and network settings;
	// Rank is set from the Setup.
	Transport transport.Config
	// BuffSize and Channels override GCCL_NET_BUFFSIZE and
	// GCCL_NET_NCHANNELS when nonzero (tests).
	BuffSize, Channels int
	// P2PDisable, like GCCL_P2P_DISABLE (either turns it on), makes every
	// connection go over the network, those between ranks of one host
	// included; every rank must agree.
	P2PDisable bool
}

// New returns the constructor of a backend with cfg, for engine.Config.
func New(cfg Config) engine.NewBackend {
	return func(ctx context.Context, s engine.Setup) (engine.Backend, error) { return Open(ctx, s, cfg) }
}

// fifoMem is one FIFO: its device address, and its host address when it
// is in pinned host memory (a network connection's); host is 0 for a
// direct connection's FIFO in GPU memory (direct.go).
type fifoMem struct{ host, dev uintptr }

// kind is the kind of the connection f belongs to.
func (f fifoMem) kind() edgeKind {
	if f.host == 0 {
		return edgeDirect
	}
	return edgeNet
}

// ringCh is one channel of the ring: the FIFO to the next rank and the
// FIFO from the previous one.
type ringCh struct{ send, recv fifoMem }

// settings are what every rank must agree on.
type settings struct {
	SlotBytes uint32
	Channels  uint8
	P2POff    bool // GCCL_P2P_DISABLE: no direct connections
}

const settingsLen = 6

// Open sets up the backend on s.Device, a CUDA device (collective over
// the ranks): it loads the ring module, allocates the control block and
// each channel's FIFOs, listens on the network provider, all-gathers the
// settings and the listeners' handles, connects the ring (each channel to
// the next rank, from the previous one) and starts the proxy with every
// FIFO.
func Open(ctx context.Context, s engine.Setup, cfg Config) (*Backend, error) {
	dev, ok := s.Device.(*device.CUDADevice)
	if !ok {
		return nil, gccl.Errorf(gccl.InvalidArgument, "device", "the GPU network backend needs a CUDA device, got %v", s.Device.Kind())
	}
	set, err := mySettings(cfg)
	if err != nil {
		return nil, err
	}
	img, err := kernels.RingFatbin()
	if err != nil {
		return nil, err
	}
	drv, _ := devlink.Driver(dev)
	g := &Backend{rank: s.Rank, nranks: s.NRanks, timeout: s.Timeout, log: s.Log, dev: dev, drv: drv, boot: s.Boot,
		slotBytes: int(set.SlotBytes), nch: int(set.Channels), p2pOff: set.P2POff, peers: map[int]*peerConn{}, fns: map[string]cuda.Function{}}
	g.links = streamjoin.New(drv)
	fail := func(err error) (*Backend, error) { // peers fail too: end at once
		_ = g.px.Abort()
		_ = g.ep.Abort()
		_ = dev.Do(g.free)
		return nil, err
	}
	if err := dev.Do(func() error { return g.allocate(img) }); err != nil {
		return fail(err)
	}
	tc := cfg.Transport
	tc.Rank = s.Rank
	if g.ep, err = transport.Listen(tc); err != nil {
		return fail(err)
	}
	if err := g.exchange(ctx, s.Boot, set); err != nil {
		return fail(err)
	}
	g.base = kernels.DevComm{AbortFlag: g.ctl.AbortFlag(), Status: g.ctl.Status(), TimeoutNs: uint64(g.timeout.Nanoseconds()),
		NRanks: int32(g.nranks), Rank: int32(g.rank)}
	g.px = proxy.New(proxy.Config{Rank: g.rank, Logger: g.log, Status: g.ctl.StatusWord(), Timeout: g.timeout})
	g.kick, g.hold = g.px.Kick, g.px.Hold
	if g.nranks > 1 {
		if err := g.connectRing(ctx, s.Boot); err != nil {
			return fail(err)
		}
	}
	return g, nil
}

// mySettings are this rank's slot size and channels, checked.
func mySettings(cfg Config) (settings, error) {
	e := env.Get()
	buf, what := cfg.BuffSize, "BuffSize"
	if buf == 0 {
		buf, what = e.NetBuffSize, "GCCL_NET_BUFFSIZE"
	}
	if buf == 0 {
		buf = DefaultBuffSize
	}
	if err := proxy.CheckSlotBytes(buf / kernels.FIFOSlots); err != nil || buf%kernels.FIFOSlots != 0 {
		return settings{}, gccl.Errorf(gccl.InvalidArgument, what, "%d bytes per FIFO: use a multiple of %d of at most %d (default %d), the same on every rank",
			buf, kernels.FIFOSlots*proxy.SlotAlign, kernels.FIFOSlots*proxy.MaxSlotBytes, DefaultBuffSize)
	}
	ch, what := cfg.Channels, "Channels"
	if ch == 0 {
		ch, what = e.NetNChannels, "GCCL_NET_NCHANNELS"
	}
	if ch == 0 {
		ch = DefaultChannels
	}
	if ch < 1 || ch > kernels.RingMaxChannels {
		return settings{}, gccl.Errorf(gccl.InvalidArgument, what, "%d channels: use 1 to %d (default %d), the same on every rank", ch, kernels.RingMaxChannels, DefaultChannels)
	}
	return settings{SlotBytes: uint32(buf / kernels.FIFOSlots), Channels: uint8(ch), P2POff: cfg.P2PDisable || e.P2PDisable}, nil
}

// allocate loads the module and makes the control block (current
// context set); connectRing makes the ring's FIFOs.
func (g *Backend) allocate(img []byte) error {
	var err error
	if g.mod, err = g.drv.ModuleLoadData(img); err != nil {
		return gccl.Errorf(gccl.Code(err), "kernels", "loading the ring kernel module: %w", err)
	}
	g.ctl.Block, err = ctlblock.Alloc(g.drv)
	return err
}

// newFIFO allocates one zeroed FIFO in pinned, device-mapped host memory
// (current context set); free frees it.
func (g *Backend) newFIFO() (fifoMem, error) {
	n := kernels.FIFOBytes(g.slotBytes)
	h, err := g.drv.MemHostAlloc(n, cuda.HostAllocDeviceMap|cuda.HostAllocPortable)
	if err != nil {
		return fifoMem{}, gccl.Errorf(gccl.Code(err), "comm", "allocating a %d-byte FIFO in pinned host memory (GCCL_NET_BUFFSIZE): %w", n, err)
	}
	clear(device.HostBytes(h, n))
	g.fifos = append(g.fifos, fifoMem{host: h})
	d, err := g.drv.MemHostGetDevicePointer(h)
	if err != nil {
		return fifoMem{}, gccl.Errorf(gccl.Code(err), "comm", "mapping a FIFO for the GPU: %w", err)
	}
	g.fifos[len(g.fifos)-1].dev = d
	return fifoMem{host: h, dev: d}, nil
}

// view is the proxy's view of f.
func (g *Backend) view(f fifoMem) (proxy.FIFO, error) {
	n := kernels.FIFOBytes(g.slotBytes)
	return proxy.NewFIFO(device.HostBytes(f.host, n), g.slotBytes)
}

// exchange all-gathers the settings and every rank's transport PeerInfo,
// checks that the ranks agree on the settings, and orders the ring by
// the ranks' host hashes (gpuplan.RingOrder: every rank the same).
func (g *Backend) exchange(ctx context.Context, boot engine.Bootstrap, set settings) error {
	info, err := g.ep.Info().MarshalBinary()
	if err != nil {
		return err
	}
	mine := binary.LittleEndian.AppendUint32(nil, set.SlotBytes)
	mine = append(mine, set.Channels, boolByte(set.P2POff))
	all, err := boot.AllGather(ctx, append(mine, info...))
	if err != nil {
		return gccl.Errorf(gccl.Code(err), "bootstrap", "exchanging network handles: %w", err)
	}
	if len(all) != g.nranks {
		return gccl.Errorf(gccl.InternalError, "bootstrap", "all-gather returned %d entries, want %d", len(all), g.nranks)
	}
	g.infos = make([]transport.PeerInfo, g.nranks)
	for r, b := range all {
		if len(b) < settingsLen {
			return gccl.Errorf(gccl.RemoteError, "peer", "rank %d sent a %d-byte network setup entry", r, len(b))
		}
		theirs := settings{SlotBytes: binary.LittleEndian.Uint32(b), Channels: b[4], P2POff: b[5] != 0}
		if theirs.SlotBytes != set.SlotBytes {
			return gccl.Errorf(gccl.InvalidUsage, "GCCL_NET_BUFFSIZE", "rank %d uses FIFOs of %d bytes, this rank (%d) %d: set GCCL_NET_BUFFSIZE the same on every rank",
				r, kernels.FIFOSlots*int(theirs.SlotBytes), g.rank, kernels.FIFOSlots*int(set.SlotBytes))
		}
		if theirs.Channels != set.Channels {
			return gccl.Errorf(gccl.InvalidUsage, "GCCL_NET_NCHANNELS", "rank %d uses %d channels, this rank (%d) %d: set GCCL_NET_NCHANNELS the same on every rank",
				r, theirs.Channels, g.rank, set.Channels)
		}
		if theirs.P2POff != set.P2POff {
			return gccl.Errorf(gccl.InvalidUsage, "GCCL_P2P_DISABLE", "rank %d runs with GCCL_P2P_DISABLE=%v, this rank (%d) with %v: ranks of one host would disagree on how they connect; set it the same on every rank",
				r, theirs.P2POff, g.rank, set.P2POff)
		}
		if err := g.infos[r].UnmarshalBinary(b[settingsLen:]); err != nil {
			return gccl.Errorf(gccl.RemoteError, "peer", "rank %d's network handle: %w", r, err)
		}
	}
	hosts := make([]uint64, g.nranks)
	for r, in := range g.infos {
		hosts[r] = in.HostHash
	}
	g.order = gpuplan.RingOrder(hosts)
	g.pos = make([]int, g.nranks)
	for p, r := range g.order {
		g.pos[r] = p
	}
	g.netEdges = gpuplan.RingNetEdges(hosts, g.order, g.p2pOff)
	return nil
}

// boolByte is b as a byte of the setup exchange.
func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// connectRing puts the ring order in device memory for the kernels and
// connects every channel to the next rank of the ring and from the
// previous one: a direct edge (direct.go) through FIFOs in the
// receiver's GPU memory, which every rank shares when any edge of the
// ring is direct; a network edge through FIFOs in pinned host memory
// that it hands to the proxy. Dials never wait for the peer, so every
// rank dials first, then accepts.
func (g *Backend) connectRing(ctx context.Context, boot engine.Bootstrap) error {
	p, n := g.pos[g.rank], g.nranks
	next, prev := g.order[(p+1)%n], g.order[(p+n-1)%n]
	sendKind, recvKind := g.kind(g.rank, next), g.kind(prev, g.rank)
	g.ring = make([]ringCh, g.nch)
	err := g.dev.Do(func() error {
		if err := g.putOrder(); err != nil {
			return err
		}
		for c := range g.ring {
			var err error
			if sendKind == edgeNet {
				if g.ring[c].send, err = g.newFIFO(); err != nil {
					return err
				}
			}
			if recvKind == edgeNet {
				if g.ring[c].recv, err = g.newFIFO(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if g.netEdges < n { // some edge is direct
		if err := g.shareRing(ctx, boot, next, prev); err != nil {
			return err
		}
	}
	if g.log != nil {
		g.log.Info("GPU ring", "rank", g.rank, "position", p, "next", next, "prev", prev, "networkEdges", g.netEdges, "ranks", n)
	}
	for c := range g.ring {
		g.logConn("send", next, c, sendKind)
		g.logConn("recv", prev, c, recvKind)
	}
	for c := range g.ring {
		if sendKind == edgeDirect {
			break
		}
		sc, err := g.ep.DialNet(ctx, g.infos[next], c)
		if err != nil {
			return err
		}
		if err := g.addSend(g.ring[c].send, sc, proxy.Label{Peer: next, Channel: c}); err != nil {
			return err
		}
	}
	for c := range g.ring {
		if recvKind == edgeDirect {
			break
		}
		rc, err := g.ep.AcceptNet(ctx, prev, c)
		if err != nil {
			return err
		}
		if err := g.addRecv(g.ring[c].recv, rc, proxy.Label{Peer: prev, Channel: c}); err != nil {
			return err
		}
	}
	return nil
}

// putOrder copies the ring order into device memory as int32s
// (kernels.RingDesc.Ranks; current context set); free frees it.
func (g *Backend) putOrder() error {
	b := make([]byte, 4*len(g.order))
	for p, r := range g.order {
		binary.LittleEndian.PutUint32(b[4*p:], uint32(r))
	}
	var err error
	if g.ranksDev, err = g.drv.MemAlloc(len(b)); err != nil {
		return gccl.Errorf(gccl.Code(err), "comm", "allocating the ring order (%d bytes) on the GPU: %w", len(b), err)
	}
	return g.drv.MemcpyHtoD(g.ranksDev, b)
}

// addSend hands a sending FIFO and its connection to the proxy, which
// owns sc from then on; on an error sc is aborted (network.Abort: the
// peer fails this setup too).
func (g *Backend) addSend(f fifoMem, sc network.SendComm, l proxy.Label) error {
	v, err := g.view(f)
	if err == nil {
		err = g.px.AddSend(v, sc, l)
	}
	if err != nil {
		_ = network.Abort(sc)
	}
	return err
}

// addRecv is addSend's receiving twin.
func (g *Backend) addRecv(f fifoMem, rc network.RecvComm, l proxy.Label) error {
	v, err := g.view(f)
	if err == nil {
		err = g.px.AddRecv(v, rc, l)
	}
	if err != nil {
		_ = network.Abort(rc)
	}
	return err
}

// free releases what allocate and the connections allocated (current
// context set; this rank's kernels done, the proxy closed): it unmaps the
// peers' direct FIFOs before it frees its own (a peer's kernel may still
// use those: its mapping keeps the memory until it unmaps it).
func (g *Backend) free() error {
	var first error
	first = errs.First(first, g.links.Close())
	g.chain.Reset()
	for _, f := range g.fifos {
		first = errs.First(first, g.drv.MemFreeHost(f.host))
	}
	for _, unmap := range g.imports {
		first = errs.First(first, unmap())
	}
	for _, p := range g.exports {
		first = errs.First(first, memalloc.Free(p))
	}
	if g.ranksDev != 0 {
		first = errs.First(first, g.drv.MemFree(g.ranksDev))
	}
	g.fifos, g.ring, g.imports, g.exports, g.ranksDev = nil, nil, nil, nil, 0
	first = errs.First(first, g.ctl.Free(g.drv))
	if g.mod != 0 {
		first = errs.First(first, g.drv.ModuleUnload(g.mod))
		g.mod = 0
	}
	return first
}
