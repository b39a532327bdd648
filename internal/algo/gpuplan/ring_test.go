package gpuplan

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gccl/gccl/internal/algo"
	"github.com/stretchr/testify/require"
)

// placement is a golden row of RingOrder: host[r] is rank r's host, -1
// for an unknown one (hash 0).
type placement struct {
	name string
	host []int
}

// hashes are the host hashes of p: host h is hash h+1, unknown is 0.
func (p placement) hashes() []uint64 {
	hs := make([]uint64, len(p.host))
	for r, h := range p.host {
		hs[r] = uint64(h + 1)
	}
	return hs
}

// blocked is n ranks on hosts of per consecutive ranks; roundRobin is
// rank r on host r % h.
func blocked(n, per int) []int {
	hs := make([]int, n)
	for r := range hs {
		hs[r] = r / per
	}
	return hs
}

func roundRobin(n, h int) []int {
	hs := make([]int, n)
	for r := range hs {
		hs[r] = r % h
	}
	return hs
}

var placements = []placement{
	{"1 rank", []int{0}},
	{"2 hosts x 1", blocked(2, 1)},
	{"2 hosts x 2, blocked", blocked(4, 2)},
	{"2 hosts x 2, round robin", roundRobin(4, 2)},
	{"3 hosts x 2, blocked", blocked(6, 2)},
	{"3 hosts x 2, round robin", roundRobin(6, 3)},
	{"2 hosts x 4, round robin", roundRobin(8, 2)},
	{"4 hosts x 2, round robin", roundRobin(8, 4)},
	{"1 host x 9", blocked(9, 9)},
	{"irregular", []int{2, 0, 2, 1, 0, 1, 1}},
	{"hosts unknown (hash 0)", []int{-1, 0, -1, 0}},
}

// orderTable renders RingOrder for every placement, with the network
// edges of rank order and of the ring.
func orderTable() string {
	var b strings.Builder
	b.WriteString("RingOrder: host of each rank (? unknown) -> ring order; network edges in rank order -> in ring order\n\n")
	for _, p := range placements {
		hs := p.hashes()
		order := RingOrder(hs)
		fmt.Fprintf(&b, "%s\n  hosts %s\n  order %s\n  network edges %d -> %d\n", p.name, hostList(p.host), intList(order),
			RingNetEdges(hs, identity(len(hs)), false), RingNetEdges(hs, order, false))
	}
	return b.String()
}

func hostList(hs []int) string {
	s := make([]string, len(hs))
	for i, h := range hs {
		s[i] = fmt.Sprint(h)
		if h < 0 {
			s[i] = "?"
		}
	}
	return strings.Join(s, " ")
}

func intList(v []int) string { return strings.Trim(fmt.Sprint(v), "[]") }

func identity(n int) []int {
	v := make([]int, n)
	for i := range v {
		v[i] = i
	}
	return v
}

// ringScenario is one section of the channel table.
type ringScenario struct {
	name string
	ring Ring // Kind and Bytes set per cell
}

var ringScenarios = []ringScenario{
	{"2 hosts x 1 (2 network edges of 2), GCCL_NET_NCHANNELS=4 (default)", Ring{NRanks: 2, NetEdges: 2, MaxChannels: 4, SlotData: 512<<10 - 16, Slots: 8}},
	{"2 hosts x 2, host-grouped ring (2 network edges of 4)", Ring{NRanks: 4, NetEdges: 2, MaxChannels: 4, SlotData: 512<<10 - 16, Slots: 8}},
	{"2 hosts x 2, rank order of a round robin (4 network edges of 4: before RingOrder)", Ring{NRanks: 4, NetEdges: 4, MaxChannels: 4, SlotData: 512<<10 - 16, Slots: 8}},
	{"3 hosts x 2, host-grouped ring (3 network edges of 6)", Ring{NRanks: 6, NetEdges: 3, MaxChannels: 4, SlotData: 512<<10 - 16, Slots: 8}},
	{"8 hosts x 8, host-grouped ring (8 network edges of 64)", Ring{NRanks: 64, NetEdges: 8, MaxChannels: 4, SlotData: 512<<10 - 16, Slots: 8}},
	{"1 host x 9 (every edge direct)", Ring{NRanks: 9, NetEdges: 0, MaxChannels: 4, SlotData: 512<<10 - 16, Slots: 8}},
	{"2 hosts x 1, GCCL_NET_NCHANNELS=16", Ring{NRanks: 2, NetEdges: 2, MaxChannels: 16, SlotData: 512<<10 - 16, Slots: 8}},
	{"2 hosts x 1, GCCL_NET_NCHANNELS=1", Ring{NRanks: 2, NetEdges: 2, MaxChannels: 1, SlotData: 512<<10 - 16, Slots: 8}},
}

// ringKinds are the collectives, the columns of the channel table.
var ringKinds = []algo.Kind{algo.AllReduce, algo.Broadcast, algo.Reduce, algo.AllGather, algo.ReduceScatter}

// channelTable renders Ring.Channels: a section per scenario, a row per
// size (Ring.Bytes), a column per collective; a cell is
// channels/modelled µs.
func channelTable() string {
	var b strings.Builder
	b.WriteString("Ring.Channels and Ring.Gather (GPU across hosts, 512 KiB slots); rows: Ring.Bytes (per rank for AllGather, per block for ReduceScatter); cells: channels/modelled µs, or gather/modelled µs\n")
	for _, sc := range ringScenarios {
		fmt.Fprintf(&b, "\n== %s\n%-10s", sc.name, "bytes")
		for _, k := range ringKinds {
			fmt.Fprintf(&b, " %-14s", k)
		}
		b.WriteString("\n")
		for _, bytes := range gpuSizes() {
			fmt.Fprintf(&b, "%-10d", bytes)
			for _, k := range ringKinds {
				r := sc.ring
				r.Kind, r.Bytes = k, bytes
				c := r.Channels()
				cell := fmt.Sprintf("%d/%d", c, r.Time(c)/1000)
				if r.Gather() {
					cell = fmt.Sprintf("gather/%d", r.GatherTime()/1000)
				}
				fmt.Fprintf(&b, " %-14s", cell)
			}
			b.WriteString("\n")
		}
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// TestGoldenRing checks RingOrder and Ring.Channels against
// testdata/ring-order.txt and testdata/ring-channels.txt (-update
// rewrites them: review the diff, every changed cell is a ring the GPU
// backend across hosts now builds or runs differently).
func TestGoldenRing(t *testing.T) {
	t.Run("order", func(t *testing.T) { checkGolden(t, "ring-order.txt", orderTable()) })
	t.Run("channels", func(t *testing.T) { checkGolden(t, "ring-channels.txt", channelTable()) })
}

// TestRingOrderProperties: on random placements the order is a
// permutation starting at rank 0, each host's ranks are consecutive and
// in rank order, and the ring crosses the network once per host (none
// with one host), or on every edge with peer memory off.
func TestRingOrderProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 1))
	for range 2000 {
		n, h := 1+rng.IntN(40), 1+rng.IntN(6)
		hs := make([]uint64, n)
		for r := range hs {
			hs[r] = uint64(rng.IntN(h + 1)) // 0: unknown, a host of its own
		}
		order := RingOrder(hs)
		require.Equal(t, identity(n), slices.Sorted(slices.Values(order)), "%v", hs)
		require.Equal(t, 0, order[0])
		hosts := map[uint64]bool{}
		units := 0 // hosts, each unknown rank its own
		for p, r := range order {
			if hs[r] == 0 {
				units++
				continue
			}
			if !hosts[hs[r]] {
				hosts[hs[r]] = true
				units++
			} else {
				require.Equal(t, hs[r], hs[order[p-1]], "host %d's ranks not consecutive in %v (hosts %v)", hs[r], order, hs)
				require.Less(t, order[p-1], r, "not in rank order")
			}
		}
		want, wantOff := units, n
		if units == 1 {
			want, wantOff = 0, n*min(1, n-1)
		}
		require.Equal(t, want, RingNetEdges(hs, order, false), "%v -> %v", hs, order)
		require.Equal(t, wantOff, RingNetEdges(hs, order, true), "%v -> %v", hs, order)
	}
}

// TestRingChannelsProperties: the grid is within 1..MaxChannels, one for
// tiny operations, MaxChannels for huge ones, and never more than what
// the best modelled time needs.
func TestRingChannelsProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 2))
	for range 20000 {
		n := 2 + rng.IntN(200)
		r := Ring{Kind: ringKinds[rng.IntN(len(ringKinds))], Bytes: rng.IntN(1 << uint(rng.IntN(34))), NRanks: n,
			NetEdges: rng.IntN(n + 1), MaxChannels: 1 + rng.IntN(16)}
		c := r.Channels()
		require.GreaterOrEqual(t, c, 1, "%+v", r)
		require.LessOrEqual(t, c, r.MaxChannels, "%+v", r)
		for k := 1; k <= r.MaxChannels; k++ {
			require.LessOrEqual(t, r.Time(c)*RingSlackDen, r.Time(k)*RingSlackNum, "%+v: %d channels, %d better", r, c, k)
		}
		r.Bytes = 64
		require.Equal(t, 1, r.Channels(), "%+v", r)
		r.Bytes = 1 << 40
		require.Equal(t, r.MaxChannels, r.Channels(), "%+v", r)
	}
}
