package fdpass

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/leakcheck"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// onRanks runs fn on n goroutines concurrently and returns their results.
func onRanks[T any](n int, fn func(r int) (T, error)) ([]T, []error) {
	out, errs := make([]T, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { out[r], errs[r] = fn(r) })
	}
	wg.Wait()
	return out, errs
}

// requireCode fails unless err is a *gccl.Error with the given code.
func requireCode(t *testing.T, err error, code gccl.Result) {
	t.Helper()
	require.Error(t, err)
	var ge *gccl.Error
	require.True(t, errors.As(err, &ge), "%T is not a *gccl.Error: %v", err, err)
	require.Equal(t, code, ge.Code, "%v", err)
}

// eventually polls cond until it holds or a deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
