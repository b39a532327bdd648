package baseline

import (
	"errors"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/internal/nccl"
	"github.com/gccl/gccl/internal/perf"
	"github.com/gccl/gccl/p2p"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNCCLBaselineWithoutLibrary(t *testing.T) {
	if nl, err := nccl.Load(); err == nil {
		t.Skipf("libnccl.so.2 is present (NCCL %s); the missing-library path is not exercised", nccl.VersionString(nl.Version()))
	}
	host, err := device.Open(device.Host, 0)
	require.NoError(t, err)
	_, err = Open("nccl", lib.Env{Device: host})
	require.Error(t, err)
	assert.ErrorIs(t, err, nccl.ErrNoLibrary)
	assert.ErrorIs(t, err, gccl.ErrSystem)
	assert.Equal(t, "baseline nccl", err.(*gccl.Error).Arg)
	assert.Contains(t, err.Error(), "baseline nccl: libnccl.so.2 not found")

}

func TestNCCLBaselineLoadFailures(t *testing.T) {
	defer func(f func() (*nccl.Library, error)) { openNCCL = f }(openNCCL)
	host, err := device.Open(device.Host, 0)
	require.NoError(t, err)

	openNCCL = func() (*nccl.Library, error) {
		return nil, gccl.Errorf(gccl.SystemError, "libnccl.so.2", "%w; install it",
			&nccl.NotFound{Name: "libnccl.so.2", Reason: "no such file"})
	}
	_, err = newNCCLBaseline(lib.Env{Device: host})
	assert.ErrorIs(t, err, nccl.ErrNoLibrary)
	assert.Equal(t, "gccl: system error: baseline nccl: libnccl.so.2 not found (no such file); install NCCL 2.x or "+
		"add its directory to LD_LIBRARY_PATH, or drop -baseline nccl", err.Error())

	openNCCL = func() (*nccl.Library, error) {
		return nil, gccl.Errorf(gccl.SystemError, "libnccl.so.2", "libnccl.so.2 does not export ncclSend")
	}
	_, err = newNCCLBaseline(lib.Env{Device: host})
	assert.NotErrorIs(t, err, nccl.ErrNoLibrary)
	assert.ErrorIs(t, err, gccl.ErrSystem)
	assert.Contains(t, err.Error(), "baseline nccl: loading libnccl.so.2")
	assert.Contains(t, err.Error(), "does not export ncclSend")
}

func randomCall(rng *rand.Rand, op perf.Op) lib.Call {
	types := gccl.DataTypes()
	n := 1 + rng.IntN(8)
	return lib.Call{Op: op, Send: uintptr(rng.Uint64N(1<<40)) << 8, Recv: uintptr(rng.Uint64N(1<<40)) << 8,
		Count: rng.IntN(1 << 20), Type: types[rng.IntN(len(types))], RedOp: gccl.RedOps()[rng.IntN(5)],
		Root: rng.IntN(n), Rank: rng.IntN(n), NRanks: n}
}

func TestNCCLOpsOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, uint64(time.Now().UnixNano())))
	kinds := map[perf.Op]nccl.OpKind{perf.AllReduce: nccl.AllReduce, perf.AllGather: nccl.AllGather,
		perf.ReduceScatter: nccl.ReduceScatter, perf.Broadcast: nccl.Broadcast, perf.Reduce: nccl.Reduce}
	for range 50 {
		for op, kind := range kinds {
			c := randomCall(rng, op)
			ops, err := ncclOpsOf(c)
			require.NoError(t, err)
			want := nccl.Op{Kind: kind, Send: c.Send, Recv: c.Recv, Count: c.Count, Type: c.Type, Op: c.RedOp, Root: c.Root}
			assert.Equal(t, []nccl.Op{want}, ops, op)
		}
		c := randomCall(rng, perf.SendRecv)
		ops, err := ncclOpsOf(c)
		require.NoError(t, err)
		assert.Equal(t, []nccl.Op{
			{Kind: nccl.Send, Send: c.Send, Count: c.Count, Type: c.Type, Peer: (c.Rank + 1) % c.NRanks},
			{Kind: nccl.Recv, Recv: c.Recv, Count: c.Count, Type: c.Type, Peer: (c.Rank + c.NRanks - 1) % c.NRanks},
		}, ops)

		c = randomCall(rng, perf.AllToAll)
		ops, err = ncclOpsOf(c)
		require.NoError(t, err)
		require.Len(t, ops, 2*c.NRanks)
		sent, received := map[int]uintptr{}, map[int]uintptr{}
		for _, o := range ops {
			assert.Equal(t, c.Count, o.Count)
			assert.Equal(t, c.Type, o.Type)
			switch o.Kind {
			case nccl.Send:
				sent[o.Peer] = o.Send
			case nccl.Recv:
				received[o.Peer] = o.Recv
			default:
				t.Fatalf("alltoall made a %v", o.Kind)
			}
		}
		for p := range c.NRanks {
			block := uintptr(p * c.Count * c.Type.Size())
			assert.Equal(t, c.Send+block, sent[p], "block for peer %d", p)
			assert.Equal(t, c.Recv+block, received[p], "block from peer %d", p)
		}
	}
	_, err := ncclOpsOf(lib.Call{Op: "gather"})
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
}

func TestNCCLBaselineSupports(t *testing.T) {
	b := &ncclBaseline{version: 22805}
	for _, op := range perf.Ops() {
		for _, dt := range gccl.DataTypes() {
			for _, ro := range gccl.RedOps() {
				assert.NoError(t, b.Supports(op, dt, ro, false), "%s %v %v", op, dt, ro)
			}
		}
	}
	assert.Error(t, b.Supports(perf.AllReduce, gccl.Float32, gccl.NumBuiltinOps, false))
	assert.NoError(t, b.Supports(perf.AllGather, gccl.Float32, gccl.NumBuiltinOps, false), "allgather has no operator")
	assert.ErrorContains(t, b.Supports(perf.SendRecv, gccl.Float32, gccl.Sum, true), "no in-place form")
	assert.ErrorContains(t, b.Supports(perf.Halo, gccl.Float32, gccl.Sum, true), "no in-place form")
	assert.NoError(t, b.Supports(perf.ReduceScatter, gccl.Float32, gccl.Sum, true))

	old := &ncclBaseline{version: 21805}
	err := old.Supports(perf.AllReduce, gccl.Float8E4M3, gccl.Sum, false)
	assert.ErrorContains(t, err, "baseline nccl")
	assert.ErrorContains(t, err, "2.18.5")
	assert.NoError(t, old.Supports(perf.AllReduce, gccl.BFloat16, gccl.Avg, false))
}

func TestNCCLBaselineRegistrations(t *testing.T) {
	b := &ncclBaseline{regs: map[uintptr]uintptr{0x1000: 0xab}}
	assert.ErrorIs(t, b.Register(0x1000, 64), gccl.ErrInvalidUsage)
	assert.ErrorIs(t, b.Deregister(0x2000), gccl.ErrInvalidArgument)
	assert.Len(t, b.regs, 1)
}

func TestShareNCCLID(t *testing.T) {
	comms, err := comm.InitAllN(3)
	require.NoError(t, err)
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	var id nccl.UniqueID
	for i := range id {
		id[i] = byte(rand.Uint32())
	}
	share := func(made error) ([]nccl.UniqueID, []error) {
		ids, errs := make([]nccl.UniqueID, len(comms)), make([]error, len(comms))
		var wg sync.WaitGroup
		for r, c := range comms {
			wg.Go(func() {
				mine, why := nccl.UniqueID{}, error(nil)
				if r == 0 {
					mine, why = id, made
				}
				ids[r], errs[r] = shareNCCLID(c, mine, why, 10*time.Second)
			})
		}
		wg.Wait()
		return ids, errs
	}
	ids, errs := share(nil)
	for r := range comms {
		require.NoError(t, errs[r])
		assert.Equal(t, id, ids[r], "rank %d", r)
	}
	_, errs = share(errors.New("no network"))
	assert.ErrorContains(t, errs[0], "no network")
	for r := 1; r < len(comms); r++ {
		assert.ErrorIs(t, errs[r], gccl.ErrRemote, "rank %d must learn of rank 0's failure", r)
	}
}

func TestNCCLBaselineKeepsNVLSOff(t *testing.T) {
	t.Setenv("GCCL_NVLS_ENABLE", "")
	t.Setenv("NCCL_NVLS_ENABLE", "")
	env.Reload()
	defer env.Reload()
	require.NoError(t, keepNCCLOffNVLS())
	assert.Equal(t, "0", os.Getenv("NCCL_NVLS_ENABLE"), "NCCL must not build multicast objects unasked")

	t.Setenv("GCCL_NVLS_ENABLE", "1")
	t.Setenv("NCCL_NVLS_ENABLE", "1")
	env.Reload()
	require.NoError(t, keepNCCLOffNVLS())
	assert.Equal(t, "1", os.Getenv("NCCL_NVLS_ENABLE"), "an explicit 1 is the user's choice")
}

// ncclHalo's groups, matched as NCCL matches them (the k-th send from r to
// q with q's k-th receive from r), put every neighbour's face i^1 into halo
// i, on grids where one rank is the neighbour on both sides or its own.
func TestNCCLHaloMatchesHaloExchange(t *testing.T) {
	const count, size = 10, 40 // elements and bytes of a face
	for _, g := range []p2p.Cart{
		{Dims: []int{2, 2}, Periodic: []bool{true, true}},
		{Dims: []int{2, 2, 1}, Periodic: []bool{true, true, true}},
		{Dims: []int{4, 1}, Periodic: []bool{false, true}},
		{Dims: []int{3}},
	} {
		n := 1
		for _, d := range g.Dims {
			n *= d
		}
		// sent[r][q] and recvd[q][r]: face and halo indices in issue order.
		sent, recvd := map[[2]int][]int{}, map[[2]int][]int{}
		for r := range n {
			c := lib.Call{Op: perf.Halo, Send: 1 << 20, Recv: 2 << 20, Count: count, Type: gccl.Float32, Rank: r, NRanks: n, Grid: g}
			ops, err := ncclOpsOf(c)
			require.NoError(t, err)
			for _, o := range ops {
				require.Equal(t, count, o.Count)
				if o.Kind == nccl.Send {
					sent[[2]int{r, o.Peer}] = append(sent[[2]int{r, o.Peer}], int(o.Send-c.Send)/size)
				} else {
					recvd[[2]int{o.Peer, r}] = append(recvd[[2]int{o.Peer, r}], int(o.Recv-c.Recv)/size)
				}
			}
		}
		require.Equal(t, len(sent), len(recvd), "grid %v", g.Dims)
		for pair, faces := range sent {
			halos := recvd[pair]
			require.Len(t, halos, len(faces), "grid %v %v", g.Dims, pair)
			for k, f := range faces {
				assert.Equal(t, f^1, halos[k], "grid %v: rank %d's face %d lands in rank %d's halo", g.Dims, pair[0], f, pair[1])
				assert.Equal(t, pair[0], g.Neighbors(pair[1])[halos[k]], "grid %v", g.Dims)
			}
		}
	}
}
