package random

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/mpiboot"
)

// wrongData is the error of a batch whose operations all completed but
// left wrong bytes: the ranks are still in step, no need to abort.
type wrongData struct{ error }

func (w wrongData) Unwrap() error { return w.error }

// runRank runs seq on this rank: every batch, then an agreement with the
// other ranks on whether to go on. It returns this rank's first failure,
// or errPeer when only another rank failed.
func runRank(m meeting, cfg *comm.Config, seq sequence, logf func(string, ...any)) (err error) {
	r, err := open(m, cfg, seq)
	failed, aerr := m.agree(err != nil)
	if aerr == nil && !failed {
		first := 0
		for _, b := range seq.batches {
			if logf != nil {
				logf("batch of ops %d-%d (group %v): %v", first, first+len(b.ops)-1, b.group, b.ops)
			}
			err = r.run(b, first, mpiWait)
			if !errors.As(err, new(wrongData)) && err != nil {
				r.abort() // peers waiting on this rank fail now, not at their deadline
			}
			if failed, aerr = m.agree(err != nil); aerr != nil || failed {
				break
			}
			first += len(b.ops)
		}
	}
	if cerr := r.close(failed || aerr != nil); cerr != nil && err == nil && !failed {
		err = fmt.Errorf("closing: %w", cerr)
	}
	switch {
	case err != nil:
		return err
	case aerr != nil:
		return fmt.Errorf("agreeing with the other ranks: %w", aerr)
	case failed:
		return errPeer
	}
	return nil
}

var errPeer = errors.New("another rank failed")

var dumped sync.Once

// dumpStacks writes every goroutine's stack to stderr, once per process:
// when ranks stall, it names what each one waits for.
func dumpStacks() {
	dumped.Do(func() {
		fmt.Fprintln(os.Stderr, "random: a rank stalled; every goroutine's stack follows")
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
	})
}

// barrier is the agreement of n goroutine ranks, with a deadline.
type barrier struct {
	mu      sync.Mutex
	n       int
	arrived int
	round   *round
}

type round struct {
	done   chan struct{}
	failed bool
}

func newBarrier(n int) *barrier { return &barrier{n: n, round: &round{done: make(chan struct{})}} }

func (b *barrier) agree(failed bool) (bool, error) {
	b.mu.Lock()
	rd := b.round
	rd.failed = rd.failed || failed
	b.arrived++
	if b.arrived == b.n {
		b.arrived, b.round = 0, &round{done: make(chan struct{})}
		close(rd.done)
	}
	b.mu.Unlock()
	select {
	case <-rd.done:
		return rd.failed, nil
	case <-time.After(*timeout):
		dumpStacks()
		return true, fmt.Errorf("the other ranks did not arrive within %v", *timeout)
	}
}

// sharedMeeting is one goroutine rank of a run in this process.
type sharedMeeting struct {
	*barrier
	rank, n int
	ids     [dupComm + 1]comm.UniqueID
}

func (m sharedMeeting) newComm(i int, cfg *comm.Config) (*comm.Comm, error) {
	return comm.InitRankConfig(m.n, m.ids[i], m.rank, cfg)
}

// mpiMeeting is this process's rank of a run over MPI.
type mpiMeeting struct{}

func (mpiMeeting) newComm(_ int, cfg *comm.Config) (*comm.Comm, error) { return mpiboot.NewComm(cfg) }

func (mpiMeeting) agree(failed bool) (bool, error) {
	flag := []byte{0}
	if failed {
		flag[0] = 1
	}
	all, err := mpiboot.Allgather(flag)
	if err != nil {
		return true, err
	}
	for _, f := range all {
		if f != 0 {
			return true, nil
		}
	}
	return false, nil
}

// TestShared runs the sequences with -random.shared ranks (default 2, 3
// and 4 in turn) as goroutines of this process, every rank on one device.
func TestShared(t *testing.T) {
	if _, size := mpiboot.World(); size != 1 {
		t.Skip("the shared form runs in a single process (TestMPI runs under mpirun)")
	}
	ns := []int{2, 3, 4}
	if *shared > 0 {
		ns = []int{*shared}
	}
	for _, n := range ns {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			s := resolve(t, rand.Uint64()|1, max(*oneDevice, 0)+1)
			s.cfg.Device, s.cfg.DeviceSet = max(*oneDevice, 0), true
			for seed := s.seed; seed < s.seed+uint64(s.seeds); seed++ {
				if !runSharedSeed(t, s, n, seed) {
					return
				}
			}
		})
	}
}

// runSharedSeed runs one seed on n goroutine ranks and reports whether it
// passed.
func runSharedSeed(t *testing.T, s settings, n int, seed uint64) bool {
	start := time.Now()
	// Kernels of the ranks' streams share one context's 32 hardware queues
	// (docs/gpu.md): no more streams than that, or two of them share a
	// queue and a kernel can wait behind its own peer.
	seq := draw(seed, s.ops, n, s.maxN, max(1, 32/n))
	m := sharedMeeting{barrier: newBarrier(n), n: n}
	for i := range m.ids {
		var err error
		if m.ids[i], err = comm.NewUniqueID(); err != nil {
			t.Fatal(err)
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		m := m
		m.rank = r
		var logf func(string, ...any)
		if *verbose && r == 0 {
			logf = t.Logf
		}
		wg.Go(func() { errs[r] = runRank(m, s.cfg, seq, logf) })
	}
	wg.Wait()
	ok := true
	for r, err := range errs {
		if err != nil && !errors.Is(err, errPeer) {
			t.Errorf("seed %d, rank %d: %v\nreplay: go test ./test/random -run TestShared %s", seed, r, err, s.replay(seed, n))
			ok = false
		}
	}
	if ok {
		t.Logf("seed %d: %d ops in %d batches on %d ranks in one process: all right (%v)", seed, s.ops, len(seq.batches), n, time.Since(start).Round(time.Millisecond))
	}
	return ok
}

// TestMPI runs the sequences with one rank per MPI process.
func TestMPI(t *testing.T) {
	rank, size := mpiboot.World()
	if size == 1 {
		t.Skip("run under mpirun with 2 or more processes (TestShared covers one process)")
	}
	s := resolve(t, seedOf(t, rand.Uint64()), mpiboot.LocalSize())
	for seed := s.seed; seed < s.seed+uint64(s.seeds); seed++ {
		start := time.Now()
		seq := draw(seed, s.ops, size, s.maxN, 0)
		var logf func(string, ...any)
		if *verbose && rank == 0 {
			logf = t.Logf
		}
		err := runRank(mpiMeeting{}, s.cfg, seq, logf)
		switch {
		case errors.Is(err, errPeer):
			t.Errorf("seed %d: another process failed (see its output)", seed)
			return
		case err != nil:
			t.Errorf("seed %d, process %d of %d: %v\nreplay: mpirun -np %d pkg.test -test.run TestMPI %s", seed, rank, size, err, size, s.replay(seed, 0))
			return
		}
		if rank == 0 {
			t.Logf("seed %d: %d ops in %d batches on %d processes: all right (%v)", seed, s.ops, len(seq.batches), size, time.Since(start).Round(time.Millisecond))
		}
	}
}
