package regs

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/graph"
	"github.com/gccl/gccl/internal/capture"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/regcache"
)

// graphRegEntry is the bytes of one buffer in the graph registration
// agreement: flags, the covering registration's seq and the offset in it.
const graphRegEntry = 1 + 8 + 8

const (
	regUsable = 1 // a collective registration with mapped peers covers it
	regUser   = 2 // ... made by Register (not a graph registration)
)

// Agree decides, for a collective o that a stream is capturing, whether it
// runs zero-copy on registrations held for the graph's lifetime (NCCL's
// graph registration). Every rank of the operation is capturing it, so
// they decide together: each all-gathers what covers its buffers; where
// every rank has the same registration at the same offset it is used,
// otherwise (none, or graph registrations that differ because ranks
// destroyed their graphs at different times) every rank registers the
// buffer anew with regcache.Cache.RegisterGraph. A buffer that Register covers on
// some ranks only is gccl.ErrInvalidUsage, as in eager operations. ok is
// false when the operation copies through the communication buffers (no
// zero-copy form, or the buffers cannot be mapped), the same on every rank.
// The GPU backend calls it for operations past the push kernel's limit
// only (the same on every rank).
//
// The registration calls the driver while the stream is capturing, so it runs with
// the thread's capture mode relaxed (cuThreadExchangeStreamCaptureMode):
// captures in global or thread-local mode stay valid.
func (v *View) Agree(o *engine.Op) (bufs []Buf, ok bool, err error) {
	n, drv := v.cfg.NRanks, v.cfg.Driver
	want := wanted(o, n)
	if want == nil {
		return nil, false, nil
	}
	runtime.LockOSThread() // the mode is the thread's; Do nests on this thread
	defer runtime.UnlockOSThread()
	var prev cuda.CaptureMode
	if err := v.cfg.Device.Do(func() (err error) {
		prev, err = drv.ThreadExchangeStreamCaptureMode(cuda.CaptureModeRelaxed)
		return err
	}); err != nil {
		return nil, false, err
	}
	defer func() {
		_ = v.cfg.Device.Do(func() error { _, err := drv.ThreadExchangeStreamCaptureMode(prev); return err })
	}()

	var fresh []*regcache.Registration // made here: dropped again if the op copies or fails
	defer func() {
		if !ok || err != nil {
			dropUnheld(fresh)
		}
	}()
	bufs = make([]Buf, len(want))
	mine := make([]byte, 0, len(want)*graphRegEntry)
	for i, w := range want {
		var flags byte
		r, off, found := v.cfg.Regs.Lookup(w[0], int(w[1]))
		if found && len(r.Peers) == n && off+int(w[1]) <= minPeerLen(r) {
			flags = regUsable
			if !r.Graph {
				flags |= regUser
			}
			bufs[i] = Buf{Reg: r, Off: off}
		}
		mine = append(mine, flags)
		mine = binary.LittleEndian.AppendUint64(mine, seqOf(bufs[i]))
		mine = binary.LittleEndian.AppendUint64(mine, uint64(bufs[i].Off))
	}
	ctx, cancel := context.WithTimeout(context.Background(), v.cfg.Timeout)
	defer cancel()
	all, err := v.cfg.Net.AllGather(ctx, mine)
	if err != nil {
		return nil, false, gccl.Errorf(gccl.Code(err), "bootstrap", "agreeing on graph registration: %w", err)
	}
	for r, b := range all {
		if len(b) != len(mine) {
			return nil, false, gccl.Errorf(gccl.RemoteError, "peer", "rank %d sent a %d-byte graph registration entry, want %d", r, len(b), len(mine))
		}
	}
	for i, w := range want {
		same, users := agreeBuf(all, i, mine[i*graphRegEntry:(i+1)*graphRegEntry])
		if j := slices.Index(want[:i], w); j >= 0 && !same { // in place: one registration
			bufs[i] = bufs[j]
			continue
		}
		switch {
		case same:
			continue
		case users != "":
			return nil, false, gccl.Errorf(gccl.InvalidUsage, "buffer",
				"%v: buffer %d is registered (Register) on ranks %s but not alike on every rank; register it on every rank, at the same offset, or on none", o.Kind, i, users)
		}
		r, err := v.cfg.Regs.RegisterGraph(w[0], int(w[1]))
		if r != nil {
			fresh = append(fresh, r)
		}
		if err != nil || len(r.Peers) != n {
			v.cfg.Log.Info("graph registration failed; the captured operation copies through the communication buffers", "op", o.Kind.String(), "err", err)
			return nil, false, nil // the same verdict on every rank
		}
		bufs[i] = Buf{Reg: r}
	}
	return bufs, true, nil
}

// dropUnheld releases graph registrations that no operation holds (an
// operation that would have held them copies instead); one that another
// operation holds stays until that lets go.
func dropUnheld(regs []*regcache.Registration) {
	for _, r := range regs {
		if release, err := r.Acquire(); err == nil {
			release()
		}
	}
}

// agreeBuf reports whether entry i is usable and the same on every rank,
// and lists the ranks where a Register registration covers it.
func agreeBuf(all [][]byte, i int, mine []byte) (same bool, users string) {
	same = mine[0]&regUsable != 0
	for r, b := range all {
		ent := b[i*graphRegEntry : (i+1)*graphRegEntry]
		if string(ent) != string(mine) {
			same = false
		}
		if ent[0]&regUser != 0 {
			users += fmt.Sprintf("%d,", r)
		}
	}
	if same {
		return true, ""
	}
	if users != "" {
		users = users[:len(users)-1]
	}
	return false, users
}

func seqOf(b Buf) uint64 {
	if b.Reg == nil {
		return 0
	}
	return b.Reg.Seq
}

// minPeerLen is the shortest registered length over r's ranks.
func minPeerLen(r *regcache.Registration) int {
	n := r.Size
	for _, p := range r.Peers {
		n = min(n, p.Len)
	}
	return n
}

// Capturing reports whether graph registration applies to an op on s:
// on, with a communicator to register through, and s capturing.
func (v *View) Capturing(s cuda.Stream) bool {
	if v.cfg.Regs == nil || !graph.RegisterEnabled() {
		return false
	}
	active, _, err := capture.Capturing(v.cfg.Driver, gccl.Stream(s))
	return err == nil && active
}
