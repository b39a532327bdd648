package regs

import (
	"encoding/binary"
	"hash/fnv"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/regcache"
)

// Config is what a View needs: the communicator's registrations, its
// bootstrap (the ranks agree on graph registrations through it), its
// size, the device and its driver, and the bound of the graph agreement.
type Config struct {
	Regs    *regcache.Cache // nil: none (nothing is found, nothing registered for graphs)
	Net     engine.Bootstrap
	NRanks  int
	Device  *device.CUDADevice
	Driver  cuda.Driver
	Timeout time.Duration
	Log     *slog.Logger
}

// View is a GPU backend's view of its communicator's buffer registrations:
// it finds the registrations that cover an operation's buffers, agrees on
// them with the peers while a stream is being captured, and holds them
// while the operation may run. It owns the completion events of the
// holds, which Close destroys.
type View struct {
	cfg    Config
	events eventPool
	// hostFuncHolds counts the ops whose holds a host function ended (too
	// many pending holds).
	hostFuncHolds atomic.Uint64
}

// New returns the view; it makes nothing until an operation holds a
// registration.
func New(cfg Config) *View { return &View{cfg: cfg} }

// Close destroys every completion event (device context current, after
// the device's work finished); later polls report done.
func (v *View) Close() error { return v.events.destroy(v.cfg.Driver) }

// EventsMade is how many completion events the view created.
func (v *View) EventsMade() int { return v.events.made() }

// HostFuncHolds is how many operations' holds a host function ended.
func (v *View) HostFuncHolds() uint64 { return v.hostFuncHolds.Load() }

// Buf is one buffer of an op found in a collective registration.
type Buf struct {
	Reg *regcache.Registration
	Off int
}

// At is rank r's copy of the buffer as this GPU addresses it: the same
// offset in r's buffer of the same collective registration.
func (b Buf) At(r int) uintptr { return b.Reg.Peers[r].Ptr + uintptr(b.Off) }

// Keyed reports whether the communicator has collective registrations, so
// every collective must take a kernel that checks the registration key at
// a barrier.
func (v *View) Keyed() bool { return v.cfg.Regs.Collective() > 0 }

// wanted lists the buffers of o that peers address (pointer, length), or
// nil when the kind has no zero-copy path.
func wanted(o *engine.Op, nranks int) [][2]uintptr {
	send, recv := o.Sizes(nranks)
	switch o.Kind {
	case algo.AllReduce:
		return [][2]uintptr{{o.Send, uintptr(send)}, {o.Recv, uintptr(recv)}}
	case algo.AllGather, algo.Broadcast: // peers store into the receive buffers (the root's is the source)
		return [][2]uintptr{{o.Recv, uintptr(recv)}}
	case algo.ReduceScatter: // peers load the send buffers
		return [][2]uintptr{{o.Send, uintptr(send)}}
	}
	return nil
}

// Find finds the buffers of o that peers address. ok is false when the
// kind has no zero-copy path or a buffer is not registered (Register;
// graph registrations serve captured operations only) with mapped peers
// on this rank.
func (v *View) Find(o *engine.Op) ([]Buf, bool, error) {
	n := v.cfg.NRanks
	want := wanted(o, n)
	if want == nil {
		return nil, false, nil
	}
	bufs := make([]Buf, len(want))
	for i, w := range want {
		r, off, ok := v.cfg.Regs.Lookup(w[0], int(w[1]))
		if !ok || r.Graph || len(r.Peers) != n {
			return nil, false, nil
		}
		for p, peer := range r.Peers {
			if off+int(w[1]) > peer.Len {
				return nil, false, gccl.Errorf(gccl.InvalidUsage, "buffer",
					"%v: %d bytes at offset %d of registration %d run past rank %d's registered %d bytes; register buffers of the same size on every rank",
					o.Kind, w[1], off, r.Seq, p, peer.Len)
			}
		}
		bufs[i] = Buf{Reg: r, Off: off}
	}
	return bufs, true, nil
}

// Key identifies the registrations and offsets of an op; every rank of
// a consistent op computes the same nonzero key, and ops that copy
// through the communication buffers use 0.
func Key(k algo.Kind, bufs []Buf) uint32 {
	h := fnv.New32a()
	var b [17]byte
	b[0] = byte(k)
	for _, x := range bufs {
		binary.LittleEndian.PutUint64(b[1:], x.Reg.Seq)
		binary.LittleEndian.PutUint64(b[9:], uint64(x.Off))
		h.Write(b[:])
	}
	return h.Sum32() | 1
}
