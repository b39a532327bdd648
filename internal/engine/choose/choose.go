package choose

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/gpu"
	"github.com/gccl/gccl/internal/engine/gpunet"
	"github.com/gccl/gccl/internal/engine/host"
	"github.com/gccl/gccl/internal/engine/viahost"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/regcache"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/transport"
	"github.com/gccl/gccl/transport/topo"
)

// Config is what the backends need beyond the engine's Setup; the zero
// value is the defaults but for Algos.
type Config struct {
	// Regs is the communicator's buffer registrations (package bufreg),
	// which the GPU backend uses; nil = none.
	Regs *regcache.Cache
	// Algos are the algorithms the host backend may run (GCCL_ALGO as
	// env.Settings.Algos parses it; the GPU backend reads the same set
	// from env with its other settings); see host.Config.
	Algos algo.Allowed
	// ChunkBytes is the host pipeline piece size (GCCL_CHUNKSIZE); 0 = the default.
	ChunkBytes int
	// Transport configures the host backend's endpoint.
	Transport transport.Config
	// Reducer does the host arithmetic; nil = host.DefaultReducer.
	Reducer host.Reducer
}

// Backend returns the constructor that picks an engine's backend:
//
//   - a host device: the host backend;
//   - a GPU whose peers can all map its memory: the GPU backend;
//   - a GPU with a peer on another host, or more ranks than the
//     peer-memory kernels address (kernels.MaxRanks): the GPU network
//     backend (package gpunet: ring kernels, FIFOs in GPU memory between
//     ranks of one host, in pinned host memory served by the proxy over
//     the network provider across hosts), capturable in CUDA graphs;
//   - a GPU with GCCL_P2P_DISABLE and every rank on this host, at most
//     kernels.MaxRanks of them: the GPU-via-host backend (copies through
//     pinned host memory and the host backend; not capturable).
//
// The network backends' endpoints learn the GPU's PCI bus id
// (transport.Config.GPUBusID) so that their network device and progress
// CPUs follow the GPU.
//
// On a GPU the ranks first all-gather their host hashes (every rank of a
// GPU communicator, so that they decide alike).
func Backend(cfg Config) engine.NewBackend {
	return func(ctx context.Context, s engine.Setup) (engine.Backend, error) {
		hc := host.Config{Transport: cfg.Transport, Algos: cfg.Algos, ChunkBytes: cfg.ChunkBytes, Reducer: cfg.Reducer}
		if _, ok := s.Device.(*device.CUDADevice); !ok || s.Device.Kind() != device.CUDA {
			return orNil(host.Open(ctx, s, hc))
		}
		hashes, err := hostHashes(ctx, s)
		if err != nil {
			return nil, err
		}
		one, p2pOff := oneHost(s.Rank, hashes), env.Get().P2PDisable
		if !gpuplan.PeersMapped(s.NRanks, p2pOff, one) {
			if hc.Transport.GPUBusID == "" {
				hc.Transport.GPUBusID = gpuBusID(s)
			}
			if viaHost(s.NRanks, p2pOff, one) {
				return orNil(viahost.Open(ctx, s, hc))
			}
			return orNil(gpunet.Open(ctx, s, gpunet.Config{Transport: hc.Transport}))
		}
		return orNil(gpu.Open(ctx, s, gpu.Config{Regs: cfg.Regs}))
	}
}

// viaHost reports whether a GPU communicator whose peers cannot map each
// other's memory goes via the host (GCCL_P2P_DISABLE on one host, within
// the kernels' ranks) rather than over the network backend (a peer on
// another host, or more ranks than the peer-memory kernels address).
// Every rank sees the same host hashes, so all decide alike.
func viaHost(nranks int, p2pDisable, allOnThisHost bool) bool {
	return p2pDisable && allOnThisHost && nranks <= kernels.MaxRanks
}

// gpuBusID is the PCI bus id of s's GPU, "dddd:bb:dd.0" from the driver's
// domain, bus and device attributes (the function is 0, as in
// cuDeviceGetPCIBusId), for the transport's placement; "" where the driver
// cannot tell, which leaves the transport to the provider's order.
func gpuBusID(s engine.Setup) string {
	gpu, ok := s.Device.(*device.CUDADevice)
	drv, ok2 := devlink.Driver(s.Device)
	if !ok || !ok2 {
		return ""
	}
	d, err := drv.DeviceGet(gpu.Ordinal())
	var v [3]int
	for i, attr := range []cuda.DeviceAttr{cuda.AttrPCIDomainID, cuda.AttrPCIBusID, cuda.AttrPCIDeviceID} {
		if err == nil {
			v[i], err = drv.DeviceAttribute(attr, d)
		}
	}
	if err != nil {
		s.Log.Debug("GPU PCI bus id unknown: the network device is not chosen by topology", "err", err)
		return ""
	}
	return fmt.Sprintf("%04x:%02x:%02x.0", v[0], v[1], v[2])
}

// orNil is b as an engine.Backend, nil (not a typed nil) on an error.
func orNil[B engine.Backend](b B, err error) (engine.Backend, error) {
	if err != nil {
		return nil, err
	}
	return b, nil
}

// hostHashes all-gathers every rank's topo.HostHash.
func hostHashes(ctx context.Context, s engine.Setup) ([]uint64, error) {
	all, err := s.Boot.AllGather(ctx, binary.LittleEndian.AppendUint64(nil, topo.HostHash()))
	if err != nil {
		return nil, gccl.Errorf(gccl.Code(err), "bootstrap", "exchanging host hashes: %w", err)
	}
	if len(all) != s.NRanks {
		return nil, gccl.Errorf(gccl.InternalError, "bootstrap", "all-gather returned %d entries, want %d", len(all), s.NRanks)
	}
	hashes := make([]uint64, len(all))
	for r, b := range all {
		if len(b) != 8 {
			return nil, gccl.Errorf(gccl.RemoteError, "peer", "rank %d sent a %d-byte host hash", r, len(b))
		}
		hashes[r] = binary.LittleEndian.Uint64(b)
	}
	return hashes, nil
}

// oneHost reports whether every rank's host hash is rank me's host.
func oneHost(me int, hashes []uint64) bool {
	for _, h := range hashes {
		if !topo.SameHost(h, hashes[me]) {
			return false
		}
	}
	return true
}
