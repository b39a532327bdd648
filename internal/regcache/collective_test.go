package regcache

import (
	"bytes"
	"context"
	"github.com/gccl/gccl/internal/fdpass"
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/gccl/gccl/internal/memalloc"
	"github.com/gccl/gccl/internal/nettest"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatherNet is an in-process all-gather among n ranks; rankNet is one
// rank's view of it (the Net a rank registers through).
type gatherNet struct {
	mu     sync.Mutex
	n      int
	rounds map[int]*gatherRound
}

type gatherRound struct {
	slots [][]byte
	left  int
	done  chan struct{}
}

type rankNet struct {
	net   *gatherNet
	rank  int
	round int
}

func newGatherNet(n int) []*rankNet {
	g := &gatherNet{n: n, rounds: map[int]*gatherRound{}}
	rs := make([]*rankNet, n)
	for r := range rs {
		rs[r] = &rankNet{net: g, rank: r}
	}
	return rs
}

func (r *rankNet) AllGather(ctx context.Context, b []byte) ([][]byte, error) {
	g := r.net
	g.mu.Lock()
	rd := g.rounds[r.round]
	if rd == nil {
		rd = &gatherRound{slots: make([][]byte, g.n), left: g.n, done: make(chan struct{})}
		g.rounds[r.round] = rd
	}
	r.round++
	rd.slots[r.rank] = append([]byte(nil), b...)
	if rd.left--; rd.left == 0 {
		close(rd.done)
	}
	g.mu.Unlock()
	select {
	case <-rd.done:
		return rd.slots, nil
	case <-ctx.Done():
		return nil, gccl.Errorf(gccl.TimeoutError, "net", "all-gather: %v", ctx.Err())
	}
}

// fakeRanks makes the caches of n communicator ranks, each on GPU 0 of
// its own fake machine (so peers' pointers are not addressable without
// mapping; the machines' address ranges are disjoint, as one process's
// are), registering collectively through nets.
func fakeRanks(t *testing.T, n int) (cs []*Cache, nets []*rankNet) {
	cs, nets = make([]*Cache, n), newGatherNet(n)
	for r := range cs {
		cs[r] = gpuRank(t, cudafake.New(cudafake.Config{MemBytes: 256 << 20, VABase: 1<<60 + uintptr(r)<<48}), 0, Owner{Rank: r, NRanks: n, Net: nets[r]})
	}
	return cs, nets
}

// TestRegisterCollectiveMapsPeers registers cudaMalloc and MemAlloc buffers of
// different sizes and offsets on three ranks and checks that every rank
// reads and writes every peer's buffer through Peers, with no copy.
func TestRegisterCollectiveMapsPeers(t *testing.T) {
	const n = 3
	cs, _ := fakeRanks(t, n)
	rng := rand.New(rand.NewPCG(41, 42))
	for round, vmm := range []bool{false, true, false} {
		ptrs, lens := make([]uintptr, n), make([]int, n)
		for r, c := range cs {
			alloc, free := c.dev.Alloc, c.dev.Free
			if vmm {
				alloc, free = func(n int) (uintptr, error) { return memalloc.Alloc(c.dev, n) }, memalloc.Free
			}
			base, err := alloc(1 << 20)
			require.NoError(t, err)
			defer func() { assert.NoError(t, free(base)) }()
			ptrs[r], lens[r] = base+uintptr(16*rng.IntN(1000)), 1000+rng.IntN(50000)
		}
		hs, errs := gccltest.Parallel(n, func(r int) (*Handle, error) { return cs[r].Register(ptrs[r], lens[r]) })
		for r := range n {
			require.NoError(t, errs[r], "rank %d", r)
			reg := hs[r].Registration()
			assert.Equal(t, uint64(round+1), reg.Seq)
			require.Len(t, reg.Peers, n)
			assert.Equal(t, uint64(round+1), cs[r].Collective())
			got, off, ok := cs[r].Lookup(ptrs[r]+8, 8)
			require.True(t, ok)
			assert.Equal(t, reg, got)
			assert.Equal(t, 8, off)
		}
		for r := range n {
			for p := range n {
				reg := hs[r].Registration()
				require.Equal(t, lens[p], reg.Peers[p].Len)
				data := nettest.RandBytes(rng, lens[p])
				require.NoError(t, cs[p].dev.CopyIn(ptrs[p], data))
				got := make([]byte, lens[p])
				require.NoError(t, cs[r].dev.CopyOut(got, reg.Peers[p].Ptr))
				require.True(t, bytes.Equal(data, got), "rank %d reads rank %d (vmm %v)", r, p, vmm)
				back := nettest.RandBytes(rng, lens[p])
				require.NoError(t, cs[r].dev.CopyIn(reg.Peers[p].Ptr, back))
				require.NoError(t, cs[p].dev.CopyOut(got, ptrs[p]))
				require.True(t, bytes.Equal(back, got), "rank %d writes rank %d", r, p)
			}
		}
		for r := range n {
			require.NoError(t, Deregister(hs[r]))
			gccltest.RequireCode(t, Deregister(hs[r]), gccl.InvalidUsage)
			assert.Empty(t, hs[r].Registration().mapped, "peers unmapped")
		}
	}
}

// TestRegisterCollectiveFailsTogether: one rank's bad buffer fails the call on
// every rank (none hangs), and the next call still lines up.
func TestRegisterCollectiveFailsTogether(t *testing.T) {
	const n = 3
	cs, _ := fakeRanks(t, n)
	ptrs := make([]uintptr, n)
	for r, c := range cs {
		p, err := c.dev.Alloc(4096)
		require.NoError(t, err)
		ptrs[r] = p
	}
	bad := []uintptr{ptrs[0], 0, ptrs[2]}
	_, errs := gccltest.Parallel(n, func(r int) (*Handle, error) { return cs[r].Register(bad[r], 4096) })
	gccltest.RequireCode(t, errs[1], gccl.InvalidArgument)
	gccltest.RequireCode(t, errs[0], gccl.InvalidUsage)
	gccltest.RequireCode(t, errs[2], gccl.InvalidUsage)
	assert.Contains(t, errs[0].Error(), "rank 1")

	past := []int{4096, 4096, 8192} // rank 2 runs past its allocation
	_, errs = gccltest.Parallel(n, func(r int) (*Handle, error) { return cs[r].Register(ptrs[r], past[r]) })
	for r := range n {
		require.Error(t, errs[r], "rank %d", r)
	}
	hs, errs := gccltest.Parallel(n, func(r int) (*Handle, error) { return cs[r].Register(ptrs[r], 4096) })
	for r := range n {
		require.NoError(t, errs[r])
		assert.Equal(t, uint64(3), hs[r].Registration().Seq, "failed calls count too")
		require.NoError(t, Deregister(hs[r]))
		require.NoError(t, cs[r].Close())
	}
}

func TestEntryRoundTripAndBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		e := entry{Seq: rng.Uint64(), PID: int64(rng.Uint32()), Registered: true, Kind: Kind(1 + rng.IntN(3)),
			Ordinal: int32(rng.IntN(8)), Base: uintptr(rng.Uint64()), Size: 1 << 20, Offset: rng.IntN(1 << 19), Len: 1 + rng.IntN(1<<19),
			FD: int32(rng.IntN(100)), Region: string(nettest.RandBytes(rng, rng.IntN(40))), Msg: string(nettest.RandBytes(rng, rng.IntN(40))),
			Unreached: rng.IntN(2) == 1, Host: rng.Uint64(), Sock: "@" + string(nettest.RandBytes(rng, rng.IntN(fdpass.MaxName)))}
		copy(e.IPC[:], nettest.RandBytes(rng, 64))
		copy(e.Token[:], nettest.RandBytes(rng, fdpass.TokenLen))
		var d entry
		require.NoError(t, d.unmarshal(e.marshal()))
		assert.Equal(t, e, d)
	}
	good := entry{Registered: true, Kind: Legacy, Size: 100, Offset: 10, Len: 90}.marshal()
	for i := range len(good) {
		var d entry
		require.Error(t, d.unmarshal(good[:i]), "truncated to %d", i)
	}
	for _, e := range []entry{
		{Registered: true, Kind: Legacy, Size: 100, Offset: 10, Len: 91},
		{Registered: true, Kind: Kind(9), Size: 100, Len: 1},
		{Registered: true, Kind: VMM, Size: 100, Len: 0},
	} {
		var d entry
		gccltest.RequireCode(t, d.unmarshal(e.marshal()), gccl.RemoteError)
	}
}
