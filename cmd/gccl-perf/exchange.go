package main

import (
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/mpiboot"
)

// exchanger all-gathers small messages between the ranks of a run, so that
// the ranks agree on timings, wrong counts and failures. Every rank calls
// it the same number of times with messages of the same length.
type exchanger interface {
	Allgather(msg []byte) ([]byte, error)
}

// mpiExchanger all-gathers over MPI (one rank per process).
type mpiExchanger struct{}

func (mpiExchanger) Allgather(msg []byte) ([]byte, error) { return mpiboot.Allgather(msg) }

// localExchanger all-gathers between goroutine ranks of one process. Each
// round ends when every rank has contributed, or at the deadline.
type localExchanger struct {
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

func newLocalExchanger(n int, timeout time.Duration) *localExchanger {
	return &localExchanger{n: n, timeout: timeout, cur: newRound(n)}
}

func newRound(n int) *round { return &round{msgs: make([][]byte, n), done: make(chan struct{})} }

// rank returns the exchanger as seen by one rank.
func (x *localExchanger) rank(r int) exchanger { return localRank{x, r} }

type localRank struct {
	x    *localExchanger
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

// report is what each rank contributes after measuring one library at one
// size: whether it failed, its wrong-element count and its iteration times.
type report struct {
	failed bool
	wrong  int64
	times  []time.Duration
}

func (r report) encode() []byte {
	b := make([]byte, 0, 16+8*len(r.times))
	var f uint64
	if r.failed {
		f = 1
	}
	b = binary.LittleEndian.AppendUint64(b, f)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.wrong))
	for _, t := range r.times {
		b = binary.LittleEndian.AppendUint64(b, uint64(t))
	}
	return b
}

// agree all-gathers every rank's report (all with iters times) and combines
// them: the time of each iteration is the slowest rank's, the wrong counts
// add up (-1 when unchecked), and any failure names the first failed rank.
func agree(x exchanger, mine report, iters int) (report, error) {
	if len(mine.times) != iters {
		mine.times = make([]time.Duration, iters) // a failed rank still takes part
		mine.failed = true
	}
	all, err := x.Allgather(mine.encode())
	if err != nil {
		return report{}, err
	}
	per := 16 + 8*iters
	if len(all)%per != 0 {
		return report{}, fmt.Errorf("exchange: %d bytes is not a whole number of %d-byte reports", len(all), per)
	}
	out := report{times: make([]time.Duration, iters)}
	for r := 0; r < len(all)/per; r++ {
		b := all[r*per:]
		if binary.LittleEndian.Uint64(b) != 0 {
			return report{}, fmt.Errorf("rank %d failed (see its error output)", r)
		}
		w := int64(binary.LittleEndian.Uint64(b[8:]))
		if w < 0 || out.wrong < 0 {
			out.wrong = -1
		} else {
			out.wrong += w
		}
		for i := range iters {
			out.times[i] = max(out.times[i], time.Duration(binary.LittleEndian.Uint64(b[16+8*i:])))
		}
	}
	return out, nil
}
