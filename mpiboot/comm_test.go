package mpiboot

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func hostConfig() *comm.Config {
	return &comm.Config{Backend: device.Host, Timeout: time.Minute, Name: "mpiboot-test"}
}

func TestShareUniqueIDIsTheSameEverywhere(t *testing.T) {
	id, err := ShareUniqueID()
	require.NoError(t, err)
	_, size := World()
	all, err := Allgather(id.Bytes())
	require.NoError(t, err)
	for r := range size {
		require.Equal(t, id.Bytes(), all[r*comm.UniqueIDBytes:(r+1)*comm.UniqueIDBytes], "rank %d", r)
	}
	again, err := ShareUniqueID()
	require.NoError(t, err)
	assert.NotEqual(t, id, again, "every call makes a fresh ID")
}

func TestNewComm(t *testing.T) {
	rank, size := World()
	c, err := NewComm(hostConfig())
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, size, c.Count())
	assert.Equal(t, rank, c.Rank())
	assert.Equal(t, LocalRank(), c.Device().Ordinal())
	require.NoError(t, c.Finalize())
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
}

func TestNewComms(t *testing.T) {
	rank, size := World()
	const ngpus = 2
	cs, err := NewComms(ngpus, hostConfig())
	require.NoError(t, err)
	require.Len(t, cs, ngpus)
	for i, c := range cs {
		assert.Equal(t, ngpus*size, c.Count())
		assert.Equal(t, rank*ngpus+i, c.Rank())
		assert.Equal(t, LocalRank()*ngpus+i, c.Device().Ordinal())
	}
	for _, c := range cs {
		require.NoError(t, c.Close()) // not Abort: peers still finishing init would count this rank as lost
	}
	_, err = NewComms(0, nil)
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
}

// fakeDevice finishes a stream after a number of polls, or never.
type fakeDevice struct {
	device.Device
	polls   atomic.Int64
	doneAt  int64 // 0: never
	failure error
}

func (f *fakeDevice) Query(gccl.Stream) (bool, error) {
	n := f.polls.Add(1)
	return f.doneAt > 0 && n >= f.doneAt, f.failure
}

func TestWaitPollsUntilDone(t *testing.T) {
	for _, k := range []int64{1, 2, 50, 300} {
		d := &fakeDevice{doneAt: k}
		require.NoError(t, Wait(d, 7, time.Minute))
		assert.Equal(t, k, d.polls.Load())
	}
}

// timedDevice finishes its stream at a point in time.
type timedDevice struct {
	device.Device
	at time.Time
}

func (f *timedDevice) Query(gccl.Stream) (bool, error) { return !time.Now().Before(f.at), nil }

func TestWaitReturnsSoonAfterCompletion(t *testing.T) {
	if _, size := World(); size > runtime.NumCPU() {
		t.Skipf("%d processes on %d CPUs: scheduling delays swamp the latency measured", size, runtime.NumCPU())
	}
	for _, after := range []time.Duration{0, 100 * time.Microsecond, 5 * time.Millisecond, 40 * time.Millisecond} {
		d := &timedDevice{at: time.Now().Add(after)}
		require.NoError(t, Wait(d, 3, time.Minute))
		late := time.Since(d.at)
		assert.GreaterOrEqual(t, late, time.Duration(0))
		// A correctness bound, not a latency goal: Wait must notice completion
		// long before its one-minute deadline even on a loaded machine.
		assert.Less(t, late, time.Second, "Wait noticed completion %v late", late)
	}
}

func TestWaitErrors(t *testing.T) {
	boom := gccl.Errorf(gccl.RemoteError, "peer 1", "gone")
	err := Wait(&fakeDevice{failure: boom}, 1, time.Minute)
	require.True(t, errors.Is(err, gccl.ErrRemote), "got %v", err)

	start := time.Now()
	err = Wait(&fakeDevice{}, 1, 50*time.Millisecond)
	require.ErrorIs(t, err, gccl.ErrTimeout)
	assert.Less(t, time.Since(start), 5*time.Second)

	require.ErrorIs(t, Wait(nil, 1, time.Second), gccl.ErrInvalidArgument)
	require.ErrorIs(t, Wait(&fakeDevice{doneAt: 1}, 1, -time.Second), gccl.ErrInvalidArgument)
}

func TestWaitOnAHostStream(t *testing.T) {
	d, err := device.Open(device.Host, 0)
	require.NoError(t, err)
	s, err := d.NewStream()
	require.NoError(t, err)
	defer d.DestroyStream(s)
	require.NoError(t, Wait(d, s, 0))
}
