package engine

import (
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLLPolicy: GCCL_PROTO decides whether the all-reduce's LL one-shot
// path may run and whether it runs past the size threshold.
func TestLLPolicy(t *testing.T) {
	for _, tc := range []struct {
		proto           string
		allowed, forced bool
	}{
		{"", true, false},
		{"LL", true, true},
		{" ll ", true, true},
		{"LL,LL128", true, true},
		{"Simple", false, false},
		{"LL128,Simple", false, false},
		{"LL,Simple", true, false},
		{"simple, ll", true, false},
		{"^LL", false, false},
		{"^Simple", true, true},
		{"^LL128", true, false},
		{"^LL,Simple", false, false},
	} {
		allowed, forced := llPolicy(tc.proto)
		assert.Equal(t, tc.allowed, allowed, "GCCL_PROTO=%q allowed", tc.proto)
		assert.Equal(t, tc.forced, forced, "GCCL_PROTO=%q forced", tc.proto)
	}
}

// TestSameSettings: ranks whose GPU settings differ are told which setting
// to align, with ErrInvalidUsage; a short entry is a remote error.
func TestSameSettings(t *testing.T) {
	mine := gpuSettings{32, 1, 0}
	require.NoError(t, sameSettings(mine, append(mine[:], 9, 9, 9), 1))
	for _, other := range []gpuSettings{{16, 1, 0}, {32, 0, 0}, {32, 1, 1}} {
		err := sameSettings(mine, append(other[:], 1, 2), 2)
		require.ErrorIs(t, err, gccl.ErrInvalidUsage, "%v", other)
		assert.Contains(t, err.Error(), "rank 2")
		assert.Contains(t, err.Error(), "GCCL_MAX_NCHANNELS")
	}
	require.ErrorIs(t, sameSettings(mine, []byte{32}, 3), gccl.ErrRemote)
}
