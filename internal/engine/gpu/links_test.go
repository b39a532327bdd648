package gpu

import (
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl/internal/algo/gpuplan"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/transport/topo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// threeGPUs is a fake machine: GPUs 0 and 1 on NVLink, GPU 2 reached from
// 0 over PCIe, and from 1 not at all; 2 sees no links (not configured).
func threeGPUs() *cudafake.Fake {
	return cudafake.New(cudafake.Config{Devices: 3, P2P: map[[2]int]cudafake.P2PAttrs{
		{0, 1}: cudafake.NVLinkAttrs, {1, 0}: cudafake.NVLinkAttrs, {0, 2}: cudafake.PCIeAttrs}})
}

func uuidOf(t *testing.T, drv cuda.Driver, ordinal int) cuda.UUID {
	u, err := drv.DeviceUUID(cuda.Device(ordinal))
	require.NoError(t, err)
	return u
}

// TestLocalLinks: a rank's view names the other GPUs by UUID with the
// link its driver reports.
func TestLocalLinks(t *testing.T) {
	f := threeGPUs()
	v := localLinks(f, 0)
	assert.Equal(t, uuidOf(t, f, 0), v.self)
	assert.Equal(t, map[cuda.UUID]topo.LinkKind{uuidOf(t, f, 1): topo.LinkNVLink, uuidOf(t, f, 2): topo.LinkPCIe}, v.links)
	v = localLinks(f, 2)
	assert.Equal(t, map[cuda.UUID]topo.LinkKind{uuidOf(t, f, 0): topo.LinkNone, uuidOf(t, f, 1): topo.LinkNone}, v.links)
	v = localLinks(f, 7)
	assert.Equal(t, cuda.UUID{}, v.self, "an ordinal the driver refuses: no view")
	assert.Empty(t, v.links)
}

// TestPeerLinksGolden: ranks on GPUs 0, 1, 2, 0 again, and one whose
// driver gave no UUID; each rank's own views come from its GPU.
func TestPeerLinksGolden(t *testing.T) {
	f := threeGPUs()
	views := []linkView{localLinks(f, 0), localLinks(f, 1), localLinks(f, 2), localLinks(f, 0), {}}
	same, nv, pcie, none, unk := topo.LinkSameDevice, topo.LinkNVLink, topo.LinkPCIe, topo.LinkNone, topo.LinkUnknown
	want := [][]topo.LinkKind{
		{same, nv, pcie, same, unk},
		{nv, same, none, nv, unk},
		// 2 sees none to 0, 0 sees PCIe to 2: the slower, none, for both.
		{none, none, same, none, unk},
		{same, nv, pcie, same, unk},
		{unk, unk, unk, unk, same},
	}
	// Rank 0 thinks PCIe to 2, rank 2 none: Agree gives both none.
	want[0][2], want[3][2] = none, none
	for me := range views {
		assert.Equal(t, want[me], peerLinks(views, me), "rank %d", me)
	}
}

// TestPeerLinksAgree: whatever the views, both ranks of a pair derive
// the same link, and a view survives its encoding.
func TestPeerLinksAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ids := make([]cuda.UUID, 5)
	for i := range ids {
		ids[i][0] = byte(i + 1)
	}
	for range 300 {
		n := 2 + rng.IntN(7)
		views := make([]linkView, n)
		for r := range views {
			v := linkView{self: ids[rng.IntN(len(ids))], links: map[cuda.UUID]topo.LinkKind{}}
			if rng.IntN(8) == 0 {
				v.self = cuda.UUID{}
			}
			for _, u := range ids {
				if u != v.self && rng.IntN(3) > 0 {
					v.links[u] = topo.LinkKind(rng.IntN(4))
				}
			}
			b := v.encode([]byte{9})
			got, rest, ok := decodeLinkView(append(b[1:], 7))
			require.True(t, ok)
			assert.Equal(t, []byte{7}, rest)
			assert.Equal(t, v.self, got.self)
			assert.Equal(t, len(v.links), len(got.links))
			for u, k := range v.links {
				assert.Equal(t, k, got.links[u])
			}
			views[r] = got
		}
		all := make([][]topo.LinkKind, n)
		for r := range n {
			all[r] = peerLinks(views, r)
		}
		for a := range n {
			for b := range n {
				require.Equal(t, all[a][b], all[b][a], "ranks %d and %d", a, b)
			}
		}
	}
	_, _, ok := decodeLinkView(make([]byte, 16))
	assert.False(t, ok, "too short for the count")
	_, _, ok = decodeLinkView(append(make([]byte, 16), 2))
	assert.False(t, ok, "too short for two GPUs")
}

// TestP2PPairsReadLinks: a pair over PCIe takes at most
// gpuplan.P2PChannelsPCIe channels; NVLink, one GPU and unknown take
// today's grid.
func TestP2PPairsReadLinks(t *testing.T) {
	set := gpuplan.DefaultSettings()
	sends, recvs := make([][]p2pPiece, 4), make([][]p2pPiece, 4)
	for p := 1; p < 4; p++ {
		sends[p] = []p2pPiece{{1, 1 << 30}}
	}
	links := []topo.LinkKind{topo.LinkSameDevice, topo.LinkNVLink, topo.LinkPCIe, topo.LinkSameDevice}
	pairs := p2pPairs(4, 0, sends, recvs, 0, 8, set, links)
	require.Len(t, pairs, 3)
	today := set.P2PChannels(4, 1<<30, topo.LinkUnknown)
	assert.Equal(t, 21, today)
	assert.Equal(t, []int{today, gpuplan.P2PChannelsPCIe, today}, []int{pairs[0].nch, pairs[1].nch, pairs[2].nch})
	for _, p := range p2pPairs(4, 0, sends, recvs, 0, 8, set, nil) {
		assert.Equal(t, today, p.nch, "no links recorded: unknown")
	}
}
