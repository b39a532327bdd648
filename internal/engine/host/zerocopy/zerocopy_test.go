package zerocopy

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/engine"
	"github.com/stretchr/testify/require"
)

var kinds = []algo.Kind{algo.AllReduce, algo.Reduce, algo.ReduceScatter, algo.AllGather, algo.Broadcast}

func TestAllKinds(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{1, 2, 3, 4, 5} {
		rs := newRanks(t, n)
		runs := uint64(0)
		for _, kind := range kinds {
			for _, count := range []int{1, n + 1, 4099, 20000 + rng.IntN(20000)} {
				for _, inPlace := range []bool{false, true} {
					op := []gccl.RedOp{gccl.Sum, gccl.Max, gccl.Avg}[rng.IntN(3)]
					rs.runCase(t, zcCase{kind: kind, count: count, root: rng.IntN(n), op: op, inPlace: inPlace}, rng, -1)
					runs += uint64(n)
					require.Equal(t, runs, rs.runs(), "n=%d %v: the zero-copy path must have run", n, kind)
				}
			}
		}
	}
}

// TestMapped runs the schedules with peers mapping each other's regions
// as separate processes do, and checks the mapping cache.
func TestMapped(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	rs := newRanks(t, 3)
	for _, z := range rs.paths {
		for p := range z.maps {
			z.maps[p].mapSelf = true
		}
	}
	for _, kind := range kinds {
		rs.runCase(t, zcCase{kind: kind, count: areaBytes/4 + rng.IntN(5000), root: rng.IntN(3), op: gccl.Sum, inPlace: rng.IntN(2) == 0}, rng, -1)
	}
	for r, z := range rs.paths {
		for p := range z.maps {
			require.LessOrEqual(t, len(z.maps[p].entries), maxMapsPerPeer, "rank %d peer %d", r, p)
			if p != r {
				require.NotEmpty(t, z.maps[p].entries, "rank %d has mapped nothing of peer %d", r, p)
			}
		}
	}
	// More regions than the cache holds: entries are evicted, results stay right.
	for range maxMapsPerPeer + 3 {
		rs.runCase(t, zcCase{kind: algo.AllReduce, count: areaBytes/4 + 257, op: gccl.Sum}, rng, -1)
	}
	for _, z := range rs.paths {
		for p := range z.maps {
			require.LessOrEqual(t, len(z.maps[p].entries), maxMapsPerPeer)
		}
	}
}

// TestFallback gives one rank buffers that peers cannot map: every rank
// must decline together (the caller then runs a step schedule).
func TestFallback(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	rs := newRanks(t, 4)
	for _, kind := range kinds {
		c := zcCase{kind: kind, count: areaBytes/4 + 3001, root: 1, op: gccl.Sum}
		require.False(t, rs.runCase(t, c, rng, 1)[0], "%v: a heap buffer on rank 1 must force the fallback", kind)
		require.Zero(t, rs.runs())
	}
	// Rank 3's heap buffers are only its own business in a Broadcast from 0.
	rs.runCase(t, zcCase{kind: algo.Broadcast, count: areaBytes / 2, root: 0}, rng, 3)
	require.Equal(t, uint64(4), rs.runs())
	// Small operations go through the copy-in areas: heap buffers anywhere are fine.
	for _, kind := range kinds {
		rs.runCase(t, zcCase{kind: kind, count: 999, root: 1, op: gccl.Max, inPlace: kind == algo.AllGather}, rng, 1)
	}
	require.Equal(t, uint64(4+4*len(kinds)), rs.runs())
	_, copyIns := rs.paths[0].Runs()
	require.Equal(t, uint64(len(kinds)), copyIns)
}

// TestPeerMissing: a rank that never runs makes the others time out at
// the first barrier; a rank that aborts makes them fail with ErrRemote
// long before the deadline.
func TestPeerMissing(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, abort := range []bool{false, true} {
		timeout := 300 * time.Millisecond
		if abort {
			timeout = 20 * time.Second
		}
		rs := newRanks(t, 3)
		ops := make([]engine.Op, 2)
		for r := range ops {
			p, _ := rs.alloc(t, 4096, rng)
			ops[r] = engine.Op{Kind: algo.AllReduce, Send: p, Recv: p, Count: 1024, Type: gccl.Int32}
		}
		live := &ranks{paths: rs.paths[:2], dev: rs.dev}
		start := time.Now()
		if abort {
			go func() {
				time.Sleep(20 * time.Millisecond)
				_ = rs.paths[2].Close(true)
			}()
		}
		_, errList := live.run(ops, timeout)
		for r, err := range errList {
			if abort {
				require.ErrorIs(t, err, gccl.ErrRemote, "rank %d", r)
			} else {
				require.ErrorIs(t, err, gccl.ErrTimeout, "rank %d", r)
			}
		}
		require.Less(t, time.Since(start), 5*time.Second)
	}
}

// TestClosed: a closed path refuses to run, and Close is safe on nil and
// twice.
func TestClosed(t *testing.T) {
	rs := newRanks(t, 1)
	require.NoError(t, rs.paths[0].Close(false))
	require.NoError(t, rs.paths[0].Close(true))
	require.NoError(t, (*Path)(nil).Close(true))
	_, errList := rs.run([]engine.Op{{Kind: algo.AllReduce, Count: 1, Type: gccl.Int32}}, time.Second)
	require.ErrorIs(t, errList[0], gccl.ErrInvalidUsage)
}

// TestDescriptorRoundTrip writes random descriptors and random garbage into
// a control block: what is read back is what was written, or "not ok", and
// never a name or offset outside its bounds.
func TestDescriptorRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	c := ctlBlock{make([]byte, ctlBytes)}
	for i := range 2000 {
		parity, which := uint32(rng.IntN(4)), rng.IntN(2)
		if i%2 == 0 {
			name := make([]byte, rng.IntN(descBytes-descName+1))
			for k := range name {
				name[k] = byte('a' + rng.IntN(26))
			}
			d := bufDesc{ok: true, pid: rng.Uint32(), base: uintptr(rng.Uint64()), size: 1 + rng.IntN(1<<30),
				ino: rng.Uint64(), name: string(name)}
			d.off = rng.IntN(d.size + 1)
			c.putDesc(parity, which, d)
			require.Equal(t, d, c.getDesc(parity, which))
			continue
		}
		b := c.desc(parity, which)
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		b[0], b[1], b[2], b[3] = 1, 0, 0, 0
		d := c.getDesc(parity, which)
		if d.ok {
			require.LessOrEqual(t, len(d.name), descBytes-descName)
			require.Positive(t, d.size)
			require.GreaterOrEqual(t, d.off, 0)
			require.LessOrEqual(t, d.off, d.size)
		}
	}
}
