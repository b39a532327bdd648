package coll_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl/coll/colltest"
	"github.com/stretchr/testify/require"
)

// withSockets forces the socket transport (GCCL_SHM_DISABLE=1) for the
// communicators the test creates, restoring the settings afterwards. The
// whole suite runs over sockets with GCCL_SHM_DISABLE=1 in the environment;
// this variant keeps a 3-rank share of it (every type and operator, fewer
// counts) in every run.
func withSockets(t *testing.T) {
	require.True(t, withEnv(t, "GCCL_SHM_DISABLE", "1").SHMDisable)
}

func TestSocketsReduceMatrix(t *testing.T) {
	withSockets(t)
	reduceMatrix(t, colltest.New(t, 3, nil), []int{1, 1031}, rand.New(rand.NewPCG(3, 30)))
}

func TestSocketsCopyMatrix(t *testing.T) {
	withSockets(t)
	copyMatrix(t, colltest.New(t, 3, nil), smallCounts(3), rand.New(rand.NewPCG(3, 31)))
}
