package gpuplan

import (
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/transport/topo"
	"github.com/stretchr/testify/require"
)

// randInput is a valid input of up to 8 ranks (peers mapped or not,
// every flag random), with settings drawn around the defaults.
func randInput(rng *rand.Rand) Input {
	n := 1 + rng.IntN(MaxRanks)
	k := algo.Kind(rng.IntN(int(algo.NumKinds)))
	es := []int{1, 2, 4, 8}[rng.IntN(4)]
	bytes := rng.IntN(1 << uint(rng.IntN(31)))
	in := Input{Kind: k, Count: bytes / es, ElemSize: es, NRanks: n, Rank: rng.IntN(n), Root: rng.IntN(n),
		Peer: rng.IntN(n), Link: topo.LinkKind(rng.IntN(5)), InPlace: rng.IntN(2) == 0, PreMulSum: k.Reduces() && rng.IntN(4) == 0,
		PeersMapped: rng.IntN(8) != 0, Capturing: rng.IntN(3) == 0, CommRegistered: rng.IntN(2) == 0,
		Registered: rng.IntN(2) == 0}
	in.Set = NewSettings(rng.IntN(80), rng.IntN(2<<30), rng.IntN(4<<20), rng.IntN(8<<20),
		algo.Allowed(rng.IntN(int(algo.AllAlgorithms)+1)), algo.Protocols(rng.IntN(int(algo.AllProtocols)+1)))
	if rng.IntN(2) == 0 {
		in.Set.Algos, in.Set.Protos = algo.AllAlgorithms, algo.AllProtocols
	}
	return in
}

// forEachInput calls f with many random inputs.
func forEachInput(t *testing.T, f func(in Input)) {
	rng := rand.New(rand.NewPCG(14, 1))
	n := 200000
	if raceEnabled { // pure code, nothing to race: fewer draws
		n /= 20
	}
	for range n {
		f(randInput(rng))
		if t.Failed() {
			return
		}
	}
}

// wantArea is the area each path uses.
var wantArea = map[Kernel]Area{KernelNone: NoArea, KernelCopy: NoArea, KernelSMCopy: NoArea, KernelOneShot: DirectArea, KernelPush: DirectArea,
	KernelPipelined: BulkArea, KernelZeroCopy: UserArea, KernelP2P: BulkArea, KernelViaHost: HostArea}

// TestChoiceValid: every choice can run its input. The kernel has a
// form for the kind, uses its own area with room for the copies, its grid
// is within the cap (a pair's share for point-to-point; the copy
// kernel's own), copies and nothing take no grid, and only a one-rank
// collective or a send to self is a copy.
func TestChoiceValid(t *testing.T) {
	forEachInput(t, func(in Input) {
		c, err := Choose(in)
		if err != nil {
			require.ErrorIs(t, err, ErrViaHostCapture, "%+v", in)
			return
		}
		require.Equal(t, wantArea[c.Kernel], c.Area, "%+v: %v", in, c)
		if c.Kernel != KernelViaHost {
			require.NotEmpty(t, c.Kernel.Family(in.Kind), "%+v: %v has no form for %v", in, c.Kernel, in.Kind)
		}
		switch c.Kernel {
		case KernelNone, KernelCopy, KernelViaHost:
			require.Zero(t, c.Grid, "%+v: %v", in, c)
		case KernelP2P:
			require.NotEqual(t, in.Rank, in.Peer)
			require.LessOrEqual(t, c.Grid*max(1, in.NRanks-1), max(2*in.Set.MaxChannels, in.NRanks-1), "%+v: %v", in, c)
			if in.Link == topo.LinkPCIe {
				require.LessOrEqual(t, c.Grid, P2PChannelsPCIe, "%+v: %v", in, c)
			}
		case KernelSMCopy:
			require.Equal(t, CopyGrid(in.Bytes()), c.Grid, "%+v: %v", in, c)
			require.True(t, c.Grid >= 1 && c.Grid <= CopyGridMax, "%+v: %v", in, c)
		default:
			require.True(t, c.Grid >= 1 && c.Grid <= in.Set.MaxChannels && c.Grid <= GridMax, "%+v: %v", in, c)
		}
		switch c.Kernel {
		case KernelOneShot:
			require.LessOrEqual(t, LLScratchBytes(in.Bytes(), in.NRanks), c.AreaBytes, "%+v", in)
		case KernelPush:
			require.Equal(t, algo.AllReduce, in.Kind)
			require.LessOrEqual(t, PushScratchBytes(in.Bytes(), in.NRanks), c.AreaBytes, "%+v", in)
		case KernelCopy:
			require.True(t, in.NRanks == 1 && !in.PreMulSum || in.Kind.IsP2P() && in.Peer == in.Rank, "%+v", in)
		case KernelSMCopy:
			require.True(t, in.NRanks == 1 && !in.PreMulSum && !in.InPlace && !in.Capturing && in.Bytes() < SingleCopyMin, "%+v", in)
		case KernelZeroCopy:
			require.True(t, in.Registered && !in.PreMulSum && in.RegLookup() != NoLookup, "%+v", in)
		}
	})
}

// TestCaptureNeverViaHost: a captured operation is refused rather than
// sent via the host, and an eager one whose peers are not mapped always
// goes via the host.
func TestCaptureNeverViaHost(t *testing.T) {
	forEachInput(t, func(in Input) {
		c, err := Choose(in)
		switch {
		case !in.PeersMapped && in.Capturing:
			require.ErrorIs(t, err, ErrViaHostCapture)
		case !in.PeersMapped:
			require.Equal(t, KernelViaHost, c.Kernel)
		default:
			require.NoError(t, err, "%+v", in)
			require.NotEqual(t, KernelViaHost, c.Kernel)
		}
	})
}

// TestOneRank: one rank with a built-in operator never launches a
// kernel for a captured or large operation, runs the copy kernel for the
// others whatever GCCL_ALGO and GCCL_PROTO say, and never launches the
// point-to-point kernel.
func TestOneRank(t *testing.T) {
	forEachInput(t, func(in Input) {
		in.NRanks, in.Rank, in.Root, in.Peer, in.PeersMapped = 1, 0, 0, 0, true
		c, err := Choose(in)
		require.NoError(t, err)
		require.NotEqual(t, KernelP2P, c.Kernel)
		if !in.PreMulSum && in.Count > 0 && !in.Kind.IsP2P() {
			want := KernelSMCopy
			switch {
			case in.InPlace:
				want = KernelNone
			case in.Capturing || in.Bytes() >= SingleCopyMin:
				want = KernelCopy
			}
			require.Equal(t, want, c.Kernel, "%+v", in)
		}
	})
}

// TestRanksAgree: a collective's choice does not depend on the rank or
// the root, and for sizes where registration is not consulted not on it
// either, so ranks cannot launch kernels that never meet.
func TestRanksAgree(t *testing.T) {
	forEachInput(t, func(in Input) {
		if in.Kind.IsP2P() || in.NRanks == 1 {
			return
		}
		c, err := Choose(in)
		other := in
		other.Rank, other.Root = (in.Rank+1)%in.NRanks, (in.Root+1)%in.NRanks
		c2, err2 := Choose(other)
		require.Equal(t, err, err2)
		require.Equal(t, c, c2, "%+v", in)
	})
}

// TestLazyInputs: where CaptureMatters or RegLookup say the engine need
// not ask, the answer cannot change the choice.
func TestLazyInputs(t *testing.T) {
	forEachInput(t, func(in Input) {
		c, err := Choose(in)
		if !in.CaptureMatters() {
			flip := in
			flip.Capturing = !in.Capturing
			c2, err2 := Choose(flip)
			require.Equal(t, err, err2, "%+v", in)
			require.Equal(t, c, c2, "capturing changed %+v", in)
			require.Equal(t, in.RegLookup(), flip.RegLookup(), "capturing changed the lookup of %+v", in)
		}
		if in.RegLookup() == NoLookup {
			flip := in
			flip.Registered = !in.Registered
			c2, _ := Choose(flip)
			require.Equal(t, c, c2, "registration changed %+v", in)
		}
	})
}

// TestHonoursLists: a kernel runs an algorithm GCCL_ALGO allows and a
// protocol GCCL_PROTO allows, except the general path (pipelined, Simple),
// which runs what nothing allowed can.
func TestHonoursLists(t *testing.T) {
	forEachInput(t, func(in Input) {
		c, err := Choose(in)
		if err != nil {
			return
		}
		if a := c.Kernel.Algorithm(); a != algo.Auto && a != algo.Pipelined {
			require.True(t, in.Set.Algos.Has(a), "%+v: %v not allowed", in, a)
		}
		if p := c.Kernel.Protocol(); p != algo.Simple {
			require.True(t, in.Set.Protos.Has(p), "%+v: %v not allowed", in, p)
		}
		// LL without Simple: the one-shot wherever the direct area holds it.
		if in.Set.Protos.LLForced() && in.Set.Algos.Has(algo.Direct) && in.PeersMapped && in.Kind.IsCollective() &&
			in.Count > 0 && (in.NRanks > 1 || in.PreMulSum) && LLScratchBytes(in.Bytes(), in.NRanks) <= DirectBytes {
			require.Equal(t, KernelOneShot, c.Kernel, "%+v", in)
		}
	})
}
