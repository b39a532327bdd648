package initcost

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/gccl/gccl/cmd/gccl-perf/internal/perftest"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeMeter is a meter on a fresh fake GPU with memBytes of memory.
func fakeMeter(t *testing.T, memBytes int) (*Meter, *cudafake.Fake) {
	f := cudafake.New(cudafake.Config{MemBytes: memBytes})
	return MeterOf(perftest.OpenGPU(t, f)), f
}

// Measure on the fake GPU: the memory figure is exactly what the init
// allocated (cuMemAlloc and cuMemCreate), whatever was allocated before;
// the time includes asynchronous work the init left on a stream.
func TestTimeInitOnFakeGPU(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, uint64(time.Now().UnixNano())))
	m, f := fakeMeter(t, 256<<20)
	_, err := m.dev.Alloc(1 + rng.IntN(1<<20)) // before the init: not counted
	require.NoError(t, err)
	g, err := f.MemGetAllocationGranularity(0, cuda.HandlePosixFD, false)
	require.NoError(t, err)
	n, k := 1+rng.IntN(8<<20), 1+rng.IntN(4)
	const lag = 30 * time.Millisecond
	var handle cuda.MemHandle
	cost, err := Measure(m, func() error {
		return m.dev.Do(func() (err error) {
			if _, err = f.MemAlloc(n); err != nil {
				return err
			}
			if handle, err = f.MemCreate(k*g, 0, cuda.HandlePosixFD); err != nil {
				return err
			}
			s, err := f.StreamCreate(cuda.StreamNonBlocking)
			if err != nil {
				return err
			}
			return f.LaunchHostFunc(s, func() { time.Sleep(lag) })
		})
	})
	require.NoError(t, err)
	assert.EqualValues(t, n+k*g, cost.MemInit, "n %d, %d x %d", n, k, g)
	assert.EqualValues(t, -1, cost.MemFirst)
	assert.GreaterOrEqual(t, cost.Took, lag, "the init's asynchronous work is waited for")

	// Freeing in the init shows as a smaller (even negative) figure.
	cost, err = Measure(m, func() error { return m.dev.Do(func() error { return f.MemRelease(handle) }) })
	require.NoError(t, err)
	assert.EqualValues(t, -k*g, cost.MemInit)

	// On the host nothing is measured but the time.
	cost, err = Measure(nil, func() error { time.Sleep(lag); return nil })
	require.NoError(t, err)
	assert.Equal(t, int64(-1), cost.MemInit)
	assert.GreaterOrEqual(t, cost.Took, lag)
	_, err = Measure(nil, func() error { return os.ErrDeadlineExceeded })
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
}
