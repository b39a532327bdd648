package gccltest

import (
	"errors"
	"sync"
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/require"
)

// Parallel runs fn for ranks 0..n-1, each in its own goroutine, and
// returns their results, indexed by rank.
func Parallel[T any](n int, fn func(rank int) (T, error)) ([]T, []error) {
	out, errs := make([]T, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { out[r], errs[r] = fn(r) })
	}
	wg.Wait()
	return out, errs
}

// RequireCode fails t unless err is a *gccl.Error (in its chain) with the
// given code.
func RequireCode(t testing.TB, err error, code gccl.Result) {
	t.Helper()
	require.Error(t, err)
	var ge *gccl.Error
	require.True(t, errors.As(err, &ge), "%T is not a *gccl.Error: %v", err, err)
	require.Equal(t, code, ge.Code, "%v", err)
}
