package exchange

import (
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/mpiboot"
)

// Exchanger all-gathers small messages between the ranks of a run, so that
// the ranks agree on timings, wrong counts and failures. Every rank calls
// it the same number of times with messages of the same length.
type Exchanger interface {
	Allgather(msg []byte) ([]byte, error)
}

// MPI all-gathers over MPI (one rank per process).
type MPI struct{}

func (MPI) Allgather(msg []byte) ([]byte, error) { return mpiboot.Allgather(msg) }

// Local all-gathers between goroutine ranks of one process. Each round
// ends when every rank has contributed, or at the deadline.
type Local struct {
	n       int
	timeout time.Duration
	mu      sync.Mutex
	cur     *round
}

type round struct {
	msgs    [][]byte
	arrived int
	done    chan struct{}
}

// NewLocal is the exchanger of n goroutine ranks; a round waits for the
// others at most timeout.
func NewLocal(n int, timeout time.Duration) *Local {
	return &Local{n: n, timeout: timeout, cur: newRound(n)}
}

func newRound(n int) *round { return &round{msgs: make([][]byte, n), done: make(chan struct{})} }

// Rank returns the exchanger as seen by rank r.
func (x *Local) Rank(r int) Exchanger { return localRank{x, r} }

type localRank struct {
	x    *Local
	rank int
}

func (l localRank) Allgather(msg []byte) ([]byte, error) {
	x := l.x
	x.mu.Lock()
	r := x.cur
	if r.msgs[l.rank] != nil {
		x.mu.Unlock()
		return nil, gccl.Errorf(gccl.InternalError, "exchange", "rank %d joined one round twice", l.rank)
	}
	r.msgs[l.rank] = append([]byte{}, msg...)
	r.arrived++
	if r.arrived == x.n {
		close(r.done)
		x.cur = newRound(x.n)
	}
	x.mu.Unlock()
	t := time.NewTimer(x.timeout)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
		return nil, gccl.Errorf(gccl.TimeoutError, "exchange", "rank %d waited %v for the other ranks; one of them failed or is stuck", l.rank, x.timeout)
	}
	var out []byte
	for i, m := range r.msgs {
		if len(m) != len(msg) {
			return nil, gccl.Errorf(gccl.InternalError, "exchange", "rank %d sent %d bytes, rank %d %d", i, len(m), l.rank, len(msg))
		}
		out = append(out, m...)
	}
	return out, nil
}

// Report is what each rank contributes after measuring one library at one
// size: whether it failed, its wrong-element count (-1: not checked) and
// its iteration times.
type Report struct {
	Failed bool
	Wrong  int64
	Times  []time.Duration
}

func (r Report) encode() []byte {
	b := make([]byte, 0, 16+8*len(r.Times))
	var f uint64
	if r.Failed {
		f = 1
	}
	b = binary.LittleEndian.AppendUint64(b, f)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Wrong))
	for _, t := range r.Times {
		b = binary.LittleEndian.AppendUint64(b, uint64(t))
	}
	return b
}

// Agree all-gathers every rank's report (all with iters times) and combines
// them: the time of each iteration is the slowest rank's, the wrong counts
// add up (-1 when unchecked), and any failure names the first failed rank.
func Agree(x Exchanger, mine Report, iters int) (Report, error) {
	if len(mine.Times) != iters {
		mine.Times = make([]time.Duration, iters) // a failed rank still takes part
		mine.Failed = true
	}
	all, err := x.Allgather(mine.encode())
	if err != nil {
		return Report{}, err
	}
	per := 16 + 8*iters
	if len(all)%per != 0 {
		return Report{}, fmt.Errorf("exchange: %d bytes is not a whole number of %d-byte reports", len(all), per)
	}
	out := Report{Times: make([]time.Duration, iters)}
	for r := 0; r < len(all)/per; r++ {
		b := all[r*per:]
		if binary.LittleEndian.Uint64(b) != 0 {
			return Report{}, fmt.Errorf("rank %d failed (see its error output)", r)
		}
		w := int64(binary.LittleEndian.Uint64(b[8:]))
		if w < 0 || out.Wrong < 0 {
			out.Wrong = -1
		} else {
			out.Wrong += w
		}
		for i := range iters {
			out.Times[i] = max(out.Times[i], time.Duration(binary.LittleEndian.Uint64(b[16+8*i:])))
		}
	}
	return out, nil
}
