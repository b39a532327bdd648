package gccltest

import (
	"fmt"
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/require"
)

func TestParallel(t *testing.T) {
	out, errs := Parallel(4, func(r int) (int, error) {
		if r == 2 {
			return 0, fmt.Errorf("rank %d", r)
		}
		return r * r, nil
	})
	require.Equal(t, []int{0, 1, 0, 9}, out)
	require.NoError(t, errs[0])
	require.EqualError(t, errs[2], "rank 2")
}

func TestRequireCode(t *testing.T) {
	RequireCode(t, fmt.Errorf("wrapped: %w", gccl.Errorf(gccl.InvalidArgument, "count", "bad")), gccl.InvalidArgument)
}
