package comm

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/gccl/gccl/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testConfig(timeout time.Duration) *Config {
	return &Config{Backend: device.Host, Timeout: timeout, Blocking: ptr(true)}
}

func makeComms(t *testing.T, n int) []*Comm {
	t.Helper()
	id, err := NewUniqueID()
	require.NoError(t, err)
	comms, errs := gccltest.Parallel(n, func(r int) (*Comm, error) { return InitRankConfig(n, id, r, testConfig(20*time.Second)) })
	t.Cleanup(func() {
		for _, c := range comms {
			assert.NoError(t, c.Close())
		}
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	return comms
}

// checkAllGather all-gathers random payloads over each comm's bootstrap and
// checks every byte.
func checkAllGather(t *testing.T, comms []*Comm) {
	t.Helper()
	seed := rand.Uint64()
	gen := func(r int) []byte {
		g := rand.New(rand.NewPCG(seed, uint64(r)))
		b := make([]byte, 1+g.IntN(4096))
		for i := range b {
			b[i] = byte(g.UintN(256))
		}
		return b
	}
	got, errs := gccltest.Parallel(len(comms), func(r int) ([][]byte, error) {
		return comms[r].bootstrap().AllGather(t.Context(), gen(comms[r].Rank()))
	})
	for r := range comms {
		require.NoError(t, errs[r])
		for p := range comms {
			require.Equal(t, gen(p), got[r][p], "rank %d sees rank %d's payload", r, p)
		}
	}
}

func TestInitFinalizeClose(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			comms := makeComms(t, n)
			for r, c := range comms {
				require.NoError(t, c.Status())
				assert.Equal(t, n, c.Count())
				assert.Equal(t, r, c.Rank())
				require.NotNil(t, c.Device())
				assert.Equal(t, device.Host, c.Device().Kind())
				assert.NotNil(t, mustEngine(t, c))
				assert.NoError(t, c.AsyncError())
			}
			checkAllGather(t, comms)
			_, errs := gccltest.Parallel(n, func(r int) (any, error) { return nil, comms[r].Finalize() })
			for r, err := range errs {
				require.NoError(t, err, "rank %d", r)
			}
			assert.ErrorIs(t, comms[0].Finalize(), gccl.ErrInvalidUsage, "second Finalize")
			for _, c := range comms {
				require.NoError(t, c.Close())
				require.NoError(t, c.Close(), "Close twice")
				assert.ErrorIs(t, c.Status(), gccl.ErrInvalidUsage)
				assert.ErrorIs(t, c.Finalize(), gccl.ErrInvalidUsage)
				assert.ErrorIs(t, c.AsyncError(), gccl.ErrInvalidUsage)
				_, err := c.Split(0, 0, nil)
				assert.ErrorIs(t, err, gccl.ErrInvalidUsage)
				_, err = c.engine()
				assert.ErrorIs(t, err, gccl.ErrInvalidUsage)
			}
		})
	}
	var nilComm *Comm
	assert.NoError(t, nilComm.Close())
	assert.NoError(t, nilComm.Abort())
}

func TestSplit(t *testing.T) {
	const n = 8
	colorings := map[string]func(r int) (color, key int){
		"parity, reversed": func(r int) (int, int) { return r % 2, -r },
		"thirds":           func(r int) (int, int) { return r / 3, r },
		"some out":         func(r int) (int, int) { return map[bool]int{true: SplitNoColor, false: 5}[r%3 == 0], (r * 5) % 7 },
		"one colour, ties": func(r int) (int, int) { return 0, r % 2 },
	}
	comms := makeComms(t, n)
	for name, coloring := range colorings {
		t.Run(name, func(t *testing.T) {
			subs, errs := gccltest.Parallel(n, func(r int) (*Comm, error) { col, key := coloring(r); return comms[r].Split(col, key, nil) })
			defer func() {
				for _, s := range subs {
					assert.NoError(t, s.Close())
				}
			}()
			groups := map[int][]int{} // colour → parent ranks ordered by (key, rank)
			for r := range n {
				require.NoError(t, errs[r], "rank %d", r)
				col, _ := coloring(r)
				if col == SplitNoColor {
					assert.Nil(t, subs[r])
					continue
				}
				groups[col] = append(groups[col], r)
			}
			for col, g := range groups {
				sortByKey(g, coloring)
				members := make([]*Comm, len(g))
				for i, parent := range g {
					s := subs[parent]
					require.NotNil(t, s)
					assert.Equal(t, len(g), s.Count(), "colour %d", col)
					assert.Equal(t, i, s.Rank(), "colour %d parent %d", col, parent)
					members[i] = s
				}
				checkAllGather(t, members)
			}
		})
	}
}

func sortByKey(g []int, coloring func(int) (int, int)) {
	for i := range g {
		for j := i + 1; j < len(g); j++ {
			_, ki := coloring(g[i])
			_, kj := coloring(g[j])
			if kj < ki || (kj == ki && g[j] < g[i]) {
				g[i], g[j] = g[j], g[i]
			}
		}
	}
}

func TestSplitInvalidColor(t *testing.T) {
	comms := makeComms(t, 3)
	subs, errs := gccltest.Parallel(3, func(r int) (*Comm, error) {
		return comms[r].Split(map[bool]int{true: -5, false: 1}[r == 1], r, nil)
	})
	for r := range 3 {
		assert.Nil(t, subs[r])
		assert.ErrorIs(t, errs[r], gccl.ErrInvalidArgument, "rank %d", r)
	}
	// The parent still works after the rejected split.
	checkAllGather(t, comms)
}

func TestNonblockingInit(t *testing.T) {
	id, err := NewUniqueID()
	require.NoError(t, err)
	cfg := testConfig(20 * time.Second)
	cfg.Blocking = ptr(false)
	c0, err := InitRankConfig(2, id, 0, cfg)
	require.NoError(t, err)
	defer c0.Close()
	assert.ErrorIs(t, c0.Status(), gccl.ErrInProgress)
	assert.ErrorIs(t, c0.Finalize(), gccl.ErrInProgress)
	_, err = c0.engine()
	assert.ErrorIs(t, err, gccl.ErrInProgress)
	c1, err := InitRankConfig(2, id, 1, cfg)
	require.NoError(t, err)
	defer c1.Close()
	require.Eventually(t, func() bool { return c0.Status() == nil && c1.Status() == nil }, 15*time.Second, 5*time.Millisecond)
	checkAllGather(t, []*Comm{c0, c1})
}

func TestCloseDuringNonblockingInit(t *testing.T) {
	id, err := NewUniqueID()
	require.NoError(t, err)
	cfg := testConfig(20 * time.Second)
	cfg.Blocking = ptr(false)
	c, err := InitRankConfig(2, id, 0, cfg)
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, c.Close())
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.ErrorIs(t, c.Status(), gccl.ErrInvalidUsage)
}

func TestScalable(t *testing.T) {
	ids := make([]UniqueID, 2)
	for i := range ids {
		var err error
		ids[i], err = NewUniqueID()
		require.NoError(t, err)
	}
	comms, errs := gccltest.Parallel(5, func(r int) (*Comm, error) { return InitRankScalable(5, r, ids, testConfig(20*time.Second)) })
	defer func() {
		for _, c := range comms {
			assert.NoError(t, c.Close())
		}
	}()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	checkAllGather(t, comms)
	_, err := InitRankScalable(1, 0, ids, nil)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument, "more IDs than ranks")
	_, err = InitRankScalable(1, 0, nil, nil)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument, "no IDs")
}

func TestInitAll(t *testing.T) {
	comms, err := InitAll([]int{2, 0, 1})
	require.NoError(t, err)
	for i, c := range comms {
		assert.Equal(t, i, c.Rank())
		assert.Equal(t, []int{2, 0, 1}[i], c.Device().Ordinal())
	}
	checkAllGather(t, comms)
	for _, c := range comms {
		require.NoError(t, c.Close())
	}
	comms, err = InitAllN(2)
	require.NoError(t, err)
	for _, c := range comms {
		require.NoError(t, c.Close())
	}
	for _, bad := range [][]int{nil, {0, 0}, {-1}} {
		_, err := InitAll(bad)
		assert.ErrorIs(t, err, gccl.ErrInvalidArgument, "%v", bad)
	}
	_, err = InitAllN(0)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
}

func TestVersion(t *testing.T) {
	assert.Equal(t, 100, Version())
}

// reseal re-encodes an ID after changing its content, so the checksum is good.
func reseal(t *testing.T, id UniqueID, change func(*wire.RootID)) UniqueID {
	r, err := wire.DecodeRootID(id[:])
	require.NoError(t, err)
	change(&r)
	return r.Encode()
}

// mustEngine returns c's engine, failing the test when c takes no operations.
func mustEngine(t *testing.T, c *Comm) any {
	t.Helper()
	e, err := c.engine()
	require.NoError(t, err)
	return e
}
