package exchange

import (
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLocalExchangerAgrees(t *testing.T) {
	const n, iters = 3, 4
	x := NewLocal(n, 5*time.Second)
	outs := make([]Report, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			for round := range 3 { // rounds reuse the exchanger
				times := make([]time.Duration, iters)
				for i := range times {
					times[i] = time.Duration((r+1)*(i+1)+round) * time.Microsecond
				}
				outs[r], errs[r] = Agree(x.Rank(r), Report{Wrong: int64(r), Times: times}, iters)
			}
		})
	}
	wg.Wait()
	for r := range n {
		require.NoError(t, errs[r])
		assert.Equal(t, int64(0+1+2), outs[r].Wrong)
		for i := range iters {
			assert.Equal(t, time.Duration(n*(i+1)+2)*time.Microsecond, outs[r].Times[i], "max over ranks")
		}
	}
}

func TestLocalExchangerFailuresAndTimeout(t *testing.T) {
	x := NewLocal(2, 5*time.Second)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r := range 2 {
		wg.Go(func() {
			mine := Report{Times: []time.Duration{1}}
			if r == 1 {
				mine = Report{} // failed before timing anything
			}
			_, errs[r] = Agree(x.Rank(r), mine, 1)
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.ErrorContains(t, err, "rank 1 failed")
	}
	lone := NewLocal(2, 50*time.Millisecond)
	start := time.Now()
	_, err := lone.Rank(0).Allgather([]byte{1})
	require.ErrorIs(t, err, gccl.ErrTimeout)
	assert.Less(t, time.Since(start), 2*time.Second)
}
