package coll_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll/colltest"
	"github.com/gccl/gccl/comm"
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

// TestSocketsDirectInPlaceAllGather: issue 16's hang over TCP. The sockets
// and the receiver's read-ahead hold a few MiB, so the in-place direct
// AllGather that waited for its own sends before receiving hung only past
// them (8 MiB per rank did on the development machine); 16 MiB per rank.
func TestSocketsDirectInPlaceAllGather(t *testing.T) {
	withSockets(t)
	withEnv(t, "GCCL_ALGO", "direct")
	w := colltest.New(t, 2, &comm.Config{Timeout: 10 * time.Second})
	var ck checker
	allGather(t, w, &ck, gccl.Int64, 2<<20+1, true, rand.New(rand.NewPCG(2, 16)))
	ck.run(t, w)
}
