package gpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/kernels"
)

// A Go emulation of gccl_p2p (kernels/p2p.cu) for the fake GPU: it decodes
// the launch's Comm and descriptor bytes as the kernel sees them and runs
// every block as a goroutine (all co-resident, as on a GPU), with the same
// channel plan, the same regions and halves of the bulk areas, and the
// barriers through the same flag and counter words, so a host-side layout
// or planning mistake shows as wrong bytes, a fault or a timeout.

// emuPiece and emuPair mirror gcclP2PPiece and gcclP2PPair.
type emuPiece struct {
	ptr   uintptr
	bytes uint64
}

type emuPair struct {
	sendBytes, recvBytes                uint64
	peer, nch, send, nsend, recv, nrecv int
}

type emuDesc struct {
	npairs int
	region uint64
	pairs  [p2pMaxPairs]emuPair
	pieces [p2pMaxPieces]emuPiece
}

// decodeP2PDesc reads struct gcclP2PDesc from the launch's second argument.
func decodeP2PDesc(b []byte) (*emuDesc, error) {
	if len(b) != p2pDescBytes {
		return nil, fmt.Errorf("gccl_p2p: descriptor of %d bytes, want %d", len(b), p2pDescBytes)
	}
	le := binary.LittleEndian
	i32 := func(at []byte) int { return int(int32(le.Uint32(at))) }
	d := &emuDesc{npairs: i32(b), region: le.Uint64(b[8:])}
	for j := range d.pairs {
		at := b[16+j*p2pPairBytes:]
		d.pairs[j] = emuPair{sendBytes: le.Uint64(at), recvBytes: le.Uint64(at[8:]), peer: i32(at[16:]), nch: i32(at[20:]),
			send: i32(at[24:]), nsend: i32(at[28:]), recv: i32(at[32:]), nrecv: i32(at[36:])}
	}
	for i := range d.pieces {
		at := b[p2pPiecesAt+16*i:]
		d.pieces[i] = emuPiece{uintptr(le.Uint64(at)), le.Uint64(at[8:])}
	}
	return d, nil
}

// registerP2PKernel makes kernels.P2P on f the emulation.
func registerP2PKernel(f *cudafake.Fake, launches *atomic.Int64) {
	f.RegisterKernel(kernels.P2P, func(f *cudafake.Fake, grid, block cuda.Dim3, a *cuda.Args) error {
		if a.Len() != 2 || block.X != kernels.Threads {
			return fmt.Errorf("gccl_p2p: %d arguments, block %v", a.Len(), block)
		}
		c := decodeWholeComm(a.Arg(0))
		d, err := decodeP2PDesc(a.Arg(1))
		if err != nil {
			return err
		}
		blocks := 0
		for j := 0; j < d.npairs && j < p2pMaxPairs; j++ {
			blocks += d.pairs[j].nch
		}
		if int(grid.X) != blocks || blocks > kernels.MaxChannels {
			return fmt.Errorf("gccl_p2p: grid %d for %d channels", grid.X, blocks)
		}
		launches.Add(1)
		errs := make([]error, grid.X)
		var wg sync.WaitGroup
		for blk := range int(grid.X) {
			wg.Go(func() { errs[blk] = emuP2PBlock(f, &c, d, blk) })
		}
		wg.Wait()
		return errors.Join(errs...)
	})
}

// emuP2PBlock is the kernel body for one block.
func emuP2PBlock(f *cudafake.Fake, c *kernels.DevComm, d *emuDesc, blk int) error {
	first := 0
	for j := 0; j < d.npairs && j < p2pMaxPairs; j++ {
		if blk < first+d.pairs[j].nch {
			return emuP2PChannel(f, c, d, &d.pairs[j], blk-first)
		}
		first += d.pairs[j].nch
	}
	return nil
}

// emuP2PChannel is p2pChannel.
func emuP2PChannel(f *cudafake.Fake, c *kernels.DevComm, d *emuDesc, p *emuPair, ch int) error {
	me, peer, nch := int(c.Rank), p.peer, uint64(p.nch)
	out, in, region := p.sendBytes, p.recvBytes, d.region
	half := region / nch / 2 / 16 * 16
	if half == 0 {
		return emuFail(f, c, kernels.StatusBadArgs)
	}
	nbytes := max(out, in)
	per := (nbytes + nch - 1) / nch
	per = (per + 15) / 16 * 16
	b := min(nbytes, per*uint64(ch))
	e := min(nbytes, b+per)
	if b >= e {
		return nil
	}
	slot := func(r, of int) uint64 {
		if r < of {
			return uint64(r)
		}
		return uint64(r - 1)
	}
	mine := c.Scratch[me] + uintptr(slot(peer, me)*region+uint64(ch)*2*half)
	theirs := c.Scratch[peer] + uintptr(slot(me, peer)*region+uint64(ch)*2*half)
	if b < out {
		if err := emuStream(f, d, p.send, p.nsend, b, min(e, b+half, out), mine, true); err != nil {
			return err
		}
	}
	if ok, err := emuBarrier(f, c, peer, ch); !ok || err != nil {
		return err
	}
	h := uint64(0)
	for sb := b; sb < e; sb, h = sb+half, h^1 {
		se := min(e, sb+half)
		if sb < in {
			if err := emuStream(f, d, p.recv, p.nrecv, sb, min(se, in), theirs+uintptr(h*half), false); err != nil {
				return err
			}
		}
		if se < e && se < out {
			if err := emuStream(f, d, p.send, p.nsend, se, min(e, se+half, out), mine+uintptr((h^1)*half), true); err != nil {
				return err
			}
		}
		if ok, err := emuBarrier(f, c, peer, ch); !ok || err != nil {
			return err
		}
	}
	return nil
}

// emuStream is p2pStream; an address outside mapped memory fails the
// launch, as a GPU fault would.
func emuStream(f *cudafake.Fake, d *emuDesc, first, n int, b, e uint64, buf uintptr, gather bool) error {
	pos := uint64(0)
	for i := first; i < first+n && pos < e; i++ {
		if i < 0 || i >= p2pMaxPieces {
			return fmt.Errorf("gccl_p2p: piece %d out of the table", i)
		}
		pc := d.pieces[i]
		lo, hi := max(pos, b), min(pos+pc.bytes, e)
		if lo < hi {
			piece, err := f.Bytes(pc.ptr+uintptr(lo-pos), int(hi-lo))
			if err != nil {
				return err
			}
			stage, err := f.Bytes(buf+uintptr(lo-b), int(hi-lo))
			if err != nil {
				return err
			}
			if gather {
				copy(stage, piece)
			} else {
				copy(piece, stage)
			}
		}
		pos += pc.bytes
	}
	return nil
}

// emuWord is the uint32 at device address p.
func emuWord(f *cudafake.Fake, p uintptr) (*atomic.Uint32, error) {
	b, err := f.Bytes(p, 4)
	if err != nil {
		return nil, err
	}
	return (*atomic.Uint32)(unsafe.Pointer(&b[0])), nil
}

// emuFail is fail(): the first failure code stays in the status word.
func emuFail(f *cudafake.Fake, c *kernels.DevComm, code uint32) error {
	if c.Status == 0 {
		return nil
	}
	st, err := emuWord(f, c.Status)
	if err != nil {
		return err
	}
	st.CompareAndSwap(kernels.StatusOK, code)
	return nil
}

// emuBarrier is p2pBarrierCh: false (without an error) when the wait gave
// up (abort, an earlier failure, the timeout), as the kernel returns.
func emuBarrier(f *cudafake.Fake, c *kernels.DevComm, peer, ch int) (bool, error) {
	const p2pFlags = kernels.MaxRanks * kernels.MaxChannels // GCCL_P2P_FLAGS
	me := int(c.Rank)
	ctr, err := emuWord(f, c.Counters+uintptr(4*(peer*kernels.MaxChannels+ch)))
	if err != nil {
		return false, err
	}
	theirs, err := emuWord(f, c.Flags[peer]+uintptr(4*(p2pFlags+me*kernels.MaxChannels+ch)))
	if err != nil {
		return false, err
	}
	mine, err := emuWord(f, c.Flags[me]+uintptr(4*(p2pFlags+peer*kernels.MaxChannels+ch)))
	if err != nil {
		return false, err
	}
	value := ctr.Load() + 1
	ctr.Store(value)
	theirs.Store(value)
	start := time.Now()
	for int32(mine.Load()-value) < 0 {
		if c.AbortFlag != 0 {
			if w, err := emuWord(f, c.AbortFlag); err == nil && w.Load() != 0 {
				return false, emuFail(f, c, kernels.StatusAborted)
			}
		}
		if c.Status != 0 {
			if w, err := emuWord(f, c.Status); err == nil && w.Load() != kernels.StatusOK {
				return false, nil
			}
		}
		if c.TimeoutNs != 0 && time.Since(start) > time.Duration(c.TimeoutNs) {
			return false, emuFail(f, c, kernels.StatusTimeout)
		}
		time.Sleep(20 * time.Microsecond)
	}
	return true, nil
}
