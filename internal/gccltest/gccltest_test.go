package gccltest

import (
	"fmt"
	"strings"
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

// TestSyncBuffer: concurrent writers lose no line (run with -race).
func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	_, errs := Parallel(8, func(r int) (struct{}, error) {
		for range 100 {
			_, err := fmt.Fprintf(&b, "rank %d\n", r)
			if err != nil {
				return struct{}{}, err
			}
			_ = b.String()
		}
		return struct{}{}, nil
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	require.Equal(t, 800, strings.Count(b.String(), "\n"))
	for r := range 8 {
		require.Equal(t, 100, strings.Count(b.String(), fmt.Sprintf("rank %d\n", r)))
	}
}

func TestRequireCode(t *testing.T) {
	RequireCode(t, fmt.Errorf("wrapped: %w", gccl.Errorf(gccl.InvalidArgument, "count", "bad")), gccl.InvalidArgument)
}
