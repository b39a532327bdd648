package gpunet

import (
	"context"
	"encoding/binary"
	"fmt"
	"syscall"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/internal/errs"
	"github.com/gccl/gccl/internal/fdpass"
	"github.com/gccl/gccl/internal/memalloc"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/transport/topo"
)

// Direct edges: a connection between two ranks of one host whose FIFO is
// one cuMem allocation in the receiver's GPU memory that the sender maps
// (docs/gpunet.md, "Direct edges"). The sending kernel writes the slots,
// the sizes and tail through the mapping, the receiving kernel reads them
// and writes head; neither the proxy nor the network takes part.

// peerTag is the bootstrap tag of the direct point-to-point setup
// messages (the comm package's own tags are negative).
const peerTag = 0x52494448 // "HDIR"

// edgeKind is how one connection moves its slots.
type edgeKind uint8

const (
	edgeNet    edgeKind = iota // FIFOs in pinned host memory, the proxy, the network provider
	edgeDirect                 // one FIFO in the receiver's GPU memory, mapped by the sender
)

func (k edgeKind) String() string {
	if k == edgeDirect {
		return "direct peer memory"
	}
	return "network"
}

// kind is the kind of the connection between ranks a and b (either way):
// direct when both are on one host (the host hashes of the setup
// exchange) and peer memory is on (GCCL_P2P_DISABLE, agreed by every rank
// at setup). Every rank decides from the same facts, so both ends agree.
func (g *Backend) kind(a, b int) edgeKind {
	if g.p2pOff || !topo.SameHost(g.infos[a].HostHash, g.infos[b].HostHash) {
		return edgeNet
	}
	return edgeDirect
}

// served is an exported FIFO allocation's descriptor while a peer fetches
// it (package fdpass).
type served struct {
	srv *fdpass.Server
	fd  int
}

// close stops serving and closes the descriptor; safe on the zero value.
func (s *served) close() {
	if s.srv != nil {
		s.srv.Close()
		_ = syscall.Close(s.fd)
	}
	*s = served{}
}

// exportFIFOs allocates n zeroed FIFOs in one cuMem allocation on this
// rank's GPU (memalloc: shareable as a POSIX file descriptor), starts
// serving its descriptor to one peer, and returns the FIFOs' base and the
// offer the peer maps them with. free frees the allocation; the peer's
// mapping keeps the memory alive until the peer unmaps it.
func (g *Backend) exportFIFOs(ctx context.Context, n int) (base uintptr, offer []byte, sv served, err error) {
	base, err = memalloc.Alloc(g.dev, n*kernels.FIFOBytes(g.slotBytes))
	if err != nil {
		return 0, nil, served{}, err
	}
	g.exports = append(g.exports, base)
	size, _ := memalloc.Size(base)
	fd := -1
	err = g.dev.Do(func() error {
		if err := g.zero(base, size); err != nil {
			return err
		}
		h, ok := memalloc.Owned(base)
		if !ok {
			return gccl.Errorf(gccl.InternalError, "comm", "the direct FIFOs at %#x are not a cuMem allocation", base)
		}
		var err error
		fd, err = g.drv.MemExportToShareableHandle(h)
		return err
	})
	if err != nil {
		return 0, nil, served{}, gccl.Errorf(gccl.Code(err), "comm", "exporting %d bytes of direct FIFOs: %w", size, err)
	}
	srv, err := fdpass.Serve(ctx, fd, 1)
	if err != nil {
		_ = syscall.Close(fd)
		return 0, nil, served{}, err
	}
	offer = binary.LittleEndian.AppendUint64(nil, uint64(size))
	offer = append(offer, srv.Token[:]...)
	return base, append(offer, srv.Name...), served{srv: srv, fd: fd}, nil
}

// zero clears n bytes of device memory at p and waits for it, on a
// stream of its own that waits for no other: a point-to-point connection
// is made in a Submit, which may be under stream capture, where the legacy
// stream would join (and invalidate) the capture (current context set).
func (g *Backend) zero(p uintptr, n int) error {
	s, err := g.drv.StreamCreate(cuda.StreamNonBlocking)
	if err != nil {
		return err
	}
	err = g.drv.MemsetD8Async(p, 0, n, s)
	if err == nil {
		err = g.drv.StreamSynchronize(s)
	}
	return errs.First(err, g.drv.StreamDestroy(s))
}

// offerFixed is an offer's size and token, before the socket name.
const offerFixed = 8 + fdpass.TokenLen

// importFIFOs maps the FIFOs that peer offered (exportFIFOs) and returns
// their base on this rank's GPU; free unmaps them.
func (g *Backend) importFIFOs(ctx context.Context, peer int, offer []byte) (uintptr, error) {
	if len(offer) <= offerFixed {
		return 0, gccl.Errorf(gccl.RemoteError, "peer", "rank %d sent a %d-byte direct FIFO offer; are all ranks running the same gccl?", peer, len(offer))
	}
	size := binary.LittleEndian.Uint64(offer)
	if want := uint64(kernels.FIFOBytes(g.slotBytes)); size < want || size > 1<<40 {
		return 0, gccl.Errorf(gccl.RemoteError, "peer", "rank %d offered %d bytes of direct FIFOs, want at least %d", peer, size, want)
	}
	fd, err := fdpass.Fetch(ctx, string(offer[offerFixed:]), [fdpass.TokenLen]byte(offer[8:offerFixed]))
	if err != nil {
		return 0, err
	}
	defer syscall.Close(fd) // the mapping holds the memory
	gpu, _ := memalloc.AsGPU(g.dev)
	var p uintptr
	err = g.dev.Do(func() error {
		var unmap func() error
		var err error
		if p, unmap, err = memalloc.Import(gpu, fd, int(size)); err == nil {
			g.imports = append(g.imports, unmap)
		}
		return err
	})
	if err != nil {
		return 0, gccl.Errorf(gccl.Code(err), "peer", "mapping rank %d's direct FIFOs: %w", peer, err)
	}
	return p, nil
}

// stepMsg is one rank's part of a setup step that every participant must
// pass: its payload, or the failure that stops it (then every participant
// fails together instead of waiting for a rank that gave up).
func stepMsg(payload []byte, err error) []byte {
	if err != nil {
		return append([]byte{1}, err.Error()...)
	}
	return append([]byte{0}, payload...)
}

// stepPayload is rank r's payload of a step message, or the error its
// failure (or this rank's own, mine) means for this rank.
func stepPayload(r int, b []byte, mine error) ([]byte, error) {
	if mine != nil {
		return nil, mine
	}
	if len(b) == 0 {
		return nil, gccl.Errorf(gccl.RemoteError, "peer", "rank %d sent an empty direct-connection setup message", r)
	}
	if b[0] != 0 {
		return nil, gccl.Errorf(gccl.RemoteError, "peer", "rank %d failed to set up its direct peer-memory connections: %s", r, b[1:])
	}
	return b[1:], nil
}

// allStep all-gathers a setup step over the bootstrap: every rank's
// payload, or the first failure of any rank.
func allStep(ctx context.Context, boot engine.Bootstrap, n int, payload []byte, mine error) ([][]byte, error) {
	all, err := boot.AllGather(ctx, stepMsg(payload, mine))
	if err != nil {
		return nil, gccl.Errorf(gccl.Code(err), "bootstrap", "exchanging direct FIFOs: %w", err)
	}
	if len(all) != n {
		return nil, gccl.Errorf(gccl.InternalError, "bootstrap", "all-gather returned %d entries, want %d", len(all), n)
	}
	out := make([][]byte, n) // all may be shared with the other ranks (in-process bootstraps)
	for r, b := range all {
		if out[r], err = stepPayload(r, b, mine); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// shareRing connects the ring's direct edges: the receiving end of each
// exports its channels' FIFOs, the ranks all-gather the offers, the
// sending end maps its next rank's, and a second all-gather makes every
// rank learn whether all of them succeeded (an all-gather, so that ranks
// that fail and ranks that do not never wait for each other). Called by
// every rank when any edge of the ring is direct.
func (g *Backend) shareRing(ctx context.Context, boot engine.Bootstrap, next, prev int) error {
	var offer []byte
	var sv served
	defer sv.close()
	var err error
	if g.kind(prev, g.rank) == edgeDirect {
		var base uintptr
		if base, offer, sv, err = g.exportFIFOs(ctx, g.nch); err == nil {
			for c := range g.ring {
				g.ring[c].recv = fifoMem{dev: base + uintptr(c*kernels.FIFOBytes(g.slotBytes))}
			}
		}
	}
	offers, err := allStep(ctx, boot, g.nranks, offer, err)
	if err != nil {
		return err
	}
	if g.kind(g.rank, next) == edgeDirect {
		var base uintptr
		if base, err = g.importFIFOs(ctx, next, offers[next]); err == nil {
			for c := range g.ring {
				g.ring[c].send = fifoMem{dev: base + uintptr(c*kernels.FIFOBytes(g.slotBytes))}
			}
		}
	}
	_, err = allStep(ctx, boot, g.nranks, nil, err)
	return err
}

// sharePeers connects this rank with the direct point-to-point peers, as
// shareRing does with bootstrap messages to each peer instead of
// all-gathers: every rank sends to all its peers before it waits for any
// (a bootstrap Send never waits for the Recv), so that ranks meeting
// several peers in different orders never wait for each other in a
// cycle. conns[i] gets peers[i]'s FIFOs.
func (g *Backend) sharePeers(ctx context.Context, boot engine.Bootstrap, peers []int, conns []*peerConn) error {
	svs := make([]served, len(peers))
	defer func() {
		for i := range svs {
			svs[i].close()
		}
	}()
	errs := make([]error, len(peers))
	for i, p := range peers {
		var base uintptr
		var offer []byte
		if base, offer, svs[i], errs[i] = g.exportFIFOs(ctx, 1); errs[i] == nil {
			conns[i].recv = fifoMem{dev: base}
		}
		if err := boot.Send(ctx, p, peerTag, stepMsg(offer, errs[i])); err != nil {
			return gccl.Errorf(gccl.Code(err), "bootstrap", "sending rank %d the direct FIFO offer: %w", p, err)
		}
	}
	for i, p := range peers {
		offer, err := g.recvStep(ctx, boot, p, errs[i])
		if err == nil {
			var base uintptr
			if base, err = g.importFIFOs(ctx, p, offer); err == nil {
				conns[i].send = fifoMem{dev: base}
			}
		}
		errs[i] = err
	}
	for i, p := range peers {
		if err := boot.Send(ctx, p, peerTag, stepMsg(nil, errs[i])); err != nil {
			return gccl.Errorf(gccl.Code(err), "bootstrap", "sending rank %d the direct connection's state: %w", p, err)
		}
	}
	var first error
	for i, p := range peers {
		if _, err := g.recvStep(ctx, boot, p, errs[i]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// recvStep receives peer's step message of sharePeers.
func (g *Backend) recvStep(ctx context.Context, boot engine.Bootstrap, peer int, mine error) ([]byte, error) {
	b, err := boot.Recv(ctx, peer, peerTag)
	if err != nil {
		return nil, gccl.Errorf(gccl.Code(err), "bootstrap", "waiting for rank %d's direct FIFO setup: %w", peer, err)
	}
	return stepPayload(peer, b, mine)
}

// logConn says at INFO how one connection moves its slots.
func (g *Backend) logConn(dir string, peer, channel int, k edgeKind) {
	if g.log == nil {
		return
	}
	via := k.String()
	if k == edgeNet {
		name, dev := g.ep.Provider()
		via = fmt.Sprintf("network provider %s, device %s (proxy)", name, dev.Name)
	}
	g.log.Info("GPU connection", "rank", g.rank, "peer", peer, "channel", channel, "direction", dir, "via", via)
}
