package comm

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/gccltest"
	"github.com/gccl/gccl/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBadArguments(t *testing.T) {
	id, err := NewUniqueID()
	require.NoError(t, err)
	cases := []struct {
		name         string
		nranks, rank int
		cfg          *Config
		arg          string
	}{
		{"nranks 0", 0, 0, nil, "nranks"},
		{"nranks negative", -3, 0, nil, "nranks"},
		{"rank high", 2, 2, nil, "rank"},
		{"rank negative", 2, -1, nil, "rank"},
		{"timeout", 1, 0, &Config{Timeout: -time.Second}, "config.Timeout"},
		{"device", 1, 0, &Config{Device: -1, DeviceSet: true}, "config.Device"},
		{"backend", 1, 0, &Config{Backend: 42}, "config.Backend"},
	}
	for _, c := range cases {
		_, err := InitRankConfig(c.nranks, id, c.rank, c.cfg)
		require.ErrorIs(t, err, gccl.ErrInvalidArgument, c.name)
		assert.Equal(t, c.arg, err.(*gccl.Error).Arg, c.name)
	}
}

func TestCorruptedAndForeignIDs(t *testing.T) {
	id, err := NewUniqueID()
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(rand.Uint64(), 1))
	for range 20 {
		bad := id
		bad[r.IntN(UniqueIDBytes)] ^= byte(1 + r.IntN(255))
		_, err := InitRank(1, bad, 0)
		assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
		_, err = ParseUniqueID(bad[:])
		assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
	}
	var random UniqueID
	for i := range random {
		random[i] = byte(r.UintN(256))
	}
	_, err = InitRank(1, random, 0)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
	_, err = ParseUniqueID(id[:64])
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
	got, err := ParseUniqueID(id.Bytes())
	require.NoError(t, err)
	assert.Equal(t, id, got)

	// Well-formed but unknown to its root: another key.
	foreign := reseal(t, id, func(r *wire.RootID) { r.Key[5] ^= 0xff })
	_, err = InitRank(1, foreign, 0)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
}

func TestWrongSecret(t *testing.T) {
	id, err := NewUniqueID()
	require.NoError(t, err)
	bad := reseal(t, id, func(r *wire.RootID) { r.Secret[0] ^= 1 })
	_, err = InitRank(1, bad, 0)
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "secret")
	c, err := InitRankConfig(1, id, 0, testConfig(10*time.Second)) // the real one was not consumed
	require.NoError(t, err)
	require.NoError(t, c.Close())
	_, err = InitRank(1, id, 0)
	assert.ErrorIs(t, err, gccl.ErrInvalidUsage, "an ID creates one communicator only")
}

func TestDuplicateRanks(t *testing.T) {
	id, err := NewUniqueID()
	require.NoError(t, err)
	ranks := []int{0, 0}
	comms, errs := gccltest.Parallel(2, func(i int) (*Comm, error) { return InitRankConfig(2, id, ranks[i], testConfig(10*time.Second)) })
	for i := range 2 {
		assert.Nil(t, comms[i])
		assert.ErrorIs(t, errs[i], gccl.ErrInvalidArgument, "caller %d", i)
	}
}

func TestMissingRankTimesOut(t *testing.T) {
	id, err := NewUniqueID()
	require.NoError(t, err)
	start := time.Now()
	_, errs := gccltest.Parallel(2, func(r int) (*Comm, error) { return InitRankConfig(3, id, r, testConfig(time.Second)) })
	assert.Less(t, time.Since(start), 3*time.Second)
	for _, err := range errs {
		require.ErrorIs(t, err, gccl.ErrTimeout)
		assert.Contains(t, err.Error(), "[2]", "names the missing rank")
	}
}

func TestAbortWhileOthersWait(t *testing.T) {
	comms := makeComms(t, 3)
	errs := make(chan error, 2)
	for r := 1; r < 3; r++ {
		go func() { errs <- comms[r].Finalize() }()
	}
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	require.NoError(t, comms[0].Abort())
	assert.Less(t, time.Since(start), time.Second, "Abort returns promptly")
	for range 2 {
		select {
		case err := <-errs:
			assert.ErrorIs(t, err, gccl.ErrRemote)
		case <-time.After(5 * time.Second):
			t.Fatal("a rank waiting on the aborted one hung")
		}
	}
	require.NoError(t, comms[0].Abort(), "Abort twice")
	assert.ErrorIs(t, comms[0].Status(), gccl.ErrInvalidUsage)
}

// TestNilComm: every method of a nil *Comm answers without panicking:
// Rank -1, Count 0, nil accessors, InvalidArgument from the calls that
// need a communicator, nil from Close and Abort.
func TestNilComm(t *testing.T) {
	var c *Comm
	assert.Equal(t, -1, c.Rank())
	assert.Equal(t, 0, c.Count())
	assert.Nil(t, c.Device())
	_, err := c.engine()
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
	assert.Nil(t, c.bootstrap())
	assert.Equal(t, Config{}, c.Config())
	assert.ErrorIs(t, c.Status(), gccl.ErrInvalidArgument)
	assert.ErrorIs(t, c.Finalize(), gccl.ErrInvalidArgument)
	_, err = c.Split(0, 0, nil)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
	assert.NotPanics(t, func() { _ = c.AsyncError() })
	assert.NoError(t, c.Close())
	assert.NoError(t, c.Abort())
}
