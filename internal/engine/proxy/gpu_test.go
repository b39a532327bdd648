package proxy_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gccl/gccl/internal/engine/proxy"
)

// stream is what one connection carries in a test: the size and the bytes
// of sequence number s are functions of (seed, s), so the receiving kernel
// checks them without being told, and stale bytes of an earlier slot or
// launch never pass.
type stream struct {
	seed      uint64
	slotBytes int
	full      bool // every slot holds slotBytes (else size says)
}

// mix is splitmix64's finaliser.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// size of slot s: 0, full, 1 byte, or random in 0..slotBytes.
func (st stream) size(s uint64) int {
	if st.full {
		return st.slotBytes
	}
	switch s % 6 {
	case 0:
		return 0
	case 1:
		return st.slotBytes
	case 2:
		return 1
	}
	return int(mix(st.seed<<32^s) % uint64(st.slotBytes+1))
}

func (st stream) word(s uint64, i int) uint64 { return mix(st.seed*0x100000001b3 ^ s<<24 ^ uint64(i)) }

// fill writes slot s's bytes into b.
func (st stream) fill(b []byte, s uint64) {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], st.word(s, i))
	}
	for ; i < len(b); i++ {
		b[i] = byte(st.word(s, i))
	}
}

// check returns the first byte of b that is not slot s's, -1 if none.
func (st stream) check(b []byte, s uint64) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:]) != st.word(s, i) {
			return i
		}
	}
	for ; i < len(b); i++ {
		if b[i] != byte(st.word(s, i)) {
			return i
		}
	}
	return -1
}

// gpu plays the kernels of one rank: their waits poll the status word
// (and stop when it is set), a stop flag (the test ending a launch early)
// and a deadline.
type gpu struct {
	status   *uint32
	stop     *atomic.Bool
	deadline time.Time
	hot      bool            // waits never sleep, as a kernel's do not (latency benchmarks)
	times    []time.Duration // pingPong's round trips (the first kernel's)
}

var (
	errStatus  = errors.New("the status word is set")
	errStopped = errors.New("stopped by the test")
	errHung    = errors.New("a wait passed the test's deadline")
)

func (w *world) gpu(r int, stop *atomic.Bool) *gpu {
	return &gpu{status: &w.ranks[r].status, stop: stop, deadline: time.Now().Add(wait)}
}

// pause is one turn of a wait loop.
func (g *gpu) pause(spins int) error {
	if atomic.LoadUint32(g.status) != 0 {
		return errStatus
	}
	if g.stop != nil && g.stop.Load() {
		return errStopped
	}
	if spins < 100 || g.hot && spins%100 != 0 {
		runtime.Gosched()
		return nil
	}
	if time.Now().After(g.deadline) {
		return errHung
	}
	if !g.hot {
		time.Sleep(20 * time.Microsecond) // gives the P back, as a kernel holds none
	}
	return nil
}

// send posts count slots of st on f as a kernel does (docs/gpunet.md, GPU
// send), starting where f's tail says.
func (g *gpu) send(f proxy.FIFO, st stream, count int) error {
	for range count {
		tail := f.Tail()
		for spins := 0; tail-f.Head() >= proxy.NSlots; spins++ {
			if err := g.pause(spins); err != nil {
				return err
			}
		}
		n := st.size(tail)
		st.fill(f.Slot(tail)[:n], tail)
		f.SetSize(tail, uint32(n))
		f.StoreTail(tail + 1)
	}
	return nil
}

// recv consumes count slots of st from f as a kernel does (GPU receive),
// starting where f's head says, and checks every size and byte.
func (g *gpu) recv(f proxy.FIFO, st stream, count int) error {
	for range count {
		head := f.Head()
		for spins := 0; f.Tail() <= head; spins++ {
			if err := g.pause(spins); err != nil {
				return err
			}
		}
		n := int(f.Size(head))
		if want := st.size(head); n != want {
			return fmt.Errorf("slot %d: %d bytes arrived, %d were sent", head, n, want)
		}
		if i := st.check(f.Slot(head)[:n], head); i >= 0 {
			return fmt.Errorf("slot %d of %d bytes: byte %d differs", head, n, i)
		}
		f.StoreHead(head + 1)
	}
	return nil
}

// pingPong runs n round trips of one slot of st each way, as two kernels
// that wait for each other: first, it sends on s then receives on r, else
// it receives, then sends.
func (g *gpu) pingPong(s, r proxy.FIFO, st stream, n int, first bool) error {
	for range n {
		t0 := time.Now()
		if first {
			if err := g.send(s, st, 1); err != nil {
				return err
			}
		}
		if err := g.recv(r, st, 1); err != nil {
			return err
		}
		if !first {
			if err := g.send(s, st, 1); err != nil {
				return err
			}
		}
		g.times = append(g.times, time.Since(t0))
	}
	return nil
}

// quantile is the q-quantile of the round trips pingPong timed.
func (g *gpu) quantile(q float64) time.Duration {
	t := slices.Clone(g.times)
	slices.Sort(t)
	return t[int(q*float64(len(t)-1))]
}

// launch runs fns concurrently, as one launch's kernels; its result waits
// for them and returns their errors.
func launch(fns ...func() error) func() error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() { errs[i] = fn() })
	}
	return func() error {
		wg.Wait()
		return errors.Join(errs...)
	}
}
