package gpuplan

import (
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/transport/topo"
)

// The GPU backend across hosts (package gpunet) runs every collective as
// one ring kernel over FIFOs: a ring edge between ranks of one host is
// direct (peer memory), any other crosses the network through the proxy.
// What it chooses lives here: the ring's order (RingOrder, once, at setup)
// and each collective's channels (Ring.Channels).

// RingOrder is the ring of a communicator whose rank r runs on the host
// whose hash is hosts[r] (transport.PeerInfo.HostHash): order[p] is the
// rank at ring position p. Ranks are grouped by host, the hosts in the
// order of their lowest rank, the ranks of a host in rank order (NCCL
// builds its rings the same way), so the ring crosses the network exactly
// once out of each host whatever the placement: mpirun's block mapping
// keeps rank order; a round-robin one (rank r on host r % H) would
// otherwise cross it on every edge. A hash of 0 (unknown) is a host of
// its own, as topo.SameHost has it. Rank 0 is at position 0. Pure:
// every rank computes the same order from the same all-gathered hashes.
func RingOrder(hosts []uint64) []int {
	group := make(map[uint64]int, len(hosts)) // host hash → index in groups
	var groups [][]int
	for r, h := range hosts {
		g, ok := group[h]
		if !ok || h == 0 {
			g = len(groups)
			groups = append(groups, nil)
			if h != 0 {
				group[h] = g
			}
		}
		groups[g] = append(groups[g], r)
	}
	order := make([]int, 0, len(hosts))
	for _, g := range groups {
		order = append(order, g...)
	}
	return order
}

// RingNetEdges is how many edges of the ring order (order[p] sends to
// order[p+1 mod n]) cross the network: those between ranks of different
// hosts (topo.SameHost of hosts), every edge when peer memory is off
// (GCCL_P2P_DISABLE). A one-rank ring has none.
func RingNetEdges(hosts []uint64, order []int, p2pOff bool) int {
	n := len(order)
	if n < 2 {
		return 0
	}
	if p2pOff {
		return n
	}
	net := 0
	for p, r := range order {
		if !topo.SameHost(hosts[r], hosts[order[(p+1)%n]]) {
			net++
		}
	}
	return net
}

// The ring cost model's figures: per edge kind, the latency of one hop
// (a slot handed from one kernel to the next: both ends' handshakes), the
// bandwidth one channel moves over the edge, and (network only) what
// each more channel adds to a hop: the proxy goroutine, one per rank,
// serves its connections one after another. Durations in nanoseconds,
// bandwidths in bytes per microsecond (MB/s), so that the model is
// integer arithmetic that every rank, on any CPU, computes alike.
//
// Sources, 2 simulated hosts x 1 rank, socket provider, under MPS
// (docs/perf-notes.md, eleventh session): NetHopNs from the one-hop
// chains, broadcast 8 B in 24 µs and reduce in 12 µs per operation,
// launch included; NetChannelMBps from the one-channel all-reduce of
// 1 MiB in 642 µs (the model: 596). The model leaves out the launch
// and the kernels' own copies: its all-reduce of 1 KiB is 44 µs, the
// measured one 82-96. NetChannelHopNs is an estimate (an Isend or
// Irecv post and its completion through the socket provider), not a
// measurement. DirectChannelMBps is one
// point-to-point channel over NVLink (~18.5 GB/s, SM-bound: see
// P2PChannels); DirectHopNs an estimate (a release store and the peer's
// acquire over the link). The network's link itself (the NIC) is not
// modelled: the providers' reported speeds are not to be trusted (a veth
// reports 10 Gb/s and carried 5.3 GB/s), so GCCL_NET_NCHANNELS, the
// user's cap, is what bounds the channels of large operations.
const (
	NetHopNs          = 20000
	NetChannelHopNs   = 2000
	NetChannelMBps    = 1900
	DirectHopNs       = 2000
	DirectChannelMBps = 18500
	// RingSlackNum/RingSlackDen: Channels takes the fewest channels whose
	// modelled time is within 1/16 of the best: a channel holds an SM and,
	// across hosts, connections the proxy serves, so one that saves less
	// is not worth it.
	RingSlackNum, RingSlackDen = 17, 16
)

// Ring is what every rank of a GPU communicator across hosts knows alike
// about one collective when it picks the collective's channels.
type Ring struct {
	Kind algo.Kind
	// Bytes per rank for AllGather and ReduceScatter (a block), else the
	// buffer's.
	Bytes  int
	NRanks int
	// NetEdges: the ring's edges that cross the network
	// (RingNetEdges); the others are direct.
	NetEdges int
	// MaxChannels: the channels connected at setup (GCCL_NET_NCHANNELS).
	MaxChannels int
	// SlotData and Slots: the data one slot of a ring collective carries
	// (kernels.RingSlotData: the slot less its key trailer) and each FIFO's
	// slots (the gather all-reduce sends the buffer in one slot and keeps
	// n-1 received ones); 0 rules the gather out.
	SlotData, Slots int
}

// GatherMaxRanks bounds the gather all-reduce's ranks
// (kernels.RingGatherMaxRanks: one more than a FIFO's slots).
const GatherMaxRanks = 9

// hops is how many hops of the ring lie on the collective's critical
// path, and wire how many bytes each rank sends over its edge.
func (r Ring) hops() (hops, wire int) {
	n := r.NRanks
	switch r.Kind {
	case algo.AllReduce: // reduce-scatter then all-gather of n chunks
		return 2 * (n - 1), 2 * (n - 1) * r.Bytes / n
	case algo.AllGather, algo.ReduceScatter:
		return n - 1, (n - 1) * r.Bytes
	}
	return n - 1, r.Bytes // Broadcast, Reduce: a pipelined chain
}

// Time is the modelled time, in nanoseconds, of the collective on k
// channels (alpha-beta, as the host's Choose):
//
//	T(k) = hops·(H·(NetHopNs + k·NetChannelHopNs) + (n-H)·DirectHopNs)/n + wire/(k·bw)
//
// with H the network edges of the n: the critical path crosses the
// ring's edges in turn, so each hop costs the edges' average, while the
// bandwidth term is the slowest edge's (the pipeline runs at its pace):
// bw is NetChannelMBps with a network edge, else DirectChannelMBps.
func (r Ring) Time(k int) int {
	hops, wire := r.hops()
	return r.path(hops, wire, k)
}

// path is the modelled time of hops ring hops on k channels while each
// rank sends wire bytes.
func (r Ring) path(hops, wire, k int) int {
	n, h := r.NRanks, r.NetEdges
	bw := DirectChannelMBps
	if h > 0 {
		bw = NetChannelMBps
	}
	lat := hops * (h*(NetHopNs+k*NetChannelHopNs) + (n-h)*DirectHopNs) / n
	return lat + nsFor(wire, k*bw)
}

// GatherTime is the modelled time of the gather all-reduce
// (kernels.RingAllReduceGather), one channel: every rank's whole buffer
// travels the ring, n-1 hops (the ring's all-reduce has 2(n-1)), each rank
// sending the buffer n-1 times.
func (r Ring) GatherTime() int {
	return r.path(r.NRanks-1, (r.NRanks-1)*r.Bytes, 1)
}

// Gather reports whether an AllReduce runs as the gather all-reduce (one
// channel) rather than the ring's reduce-scatter and all-gather: where it
// can (the buffer in one slot, the n-1 slots each rank keeps in its FIFO,
// at most GatherMaxRanks ranks) and its GatherTime is below the ring's
// Time on Channels() channels. Pure, like Channels: every rank decides
// alike.
func (r Ring) Gather() bool {
	n := r.NRanks
	if r.Kind != algo.AllReduce || n < 2 || n > GatherMaxRanks || n-1 > r.Slots || r.Bytes > r.SlotData {
		return false
	}
	return r.GatherTime() < r.Time(r.Channels())
}

// nsFor is the nanoseconds bytes take at mbps bytes per microsecond,
// rounded down, without overflowing.
func nsFor(bytes, mbps int) int {
	return bytes/mbps*1000 + bytes%mbps*1000/mbps
}

// Channels is the collective's grid: the fewest channels, 1 to
// MaxChannels, whose modelled Time is within RingSlackNum/RingSlackDen
// of the best. Small operations take one channel (latency rules), large
// ones MaxChannels; between, the proxy's cost per channel and per hop
// against the bandwidth a channel adds. Every input is agreed by every
// rank, so every rank launches the same grid.
func (r Ring) Channels() int {
	if r.NRanks < 2 || r.MaxChannels <= 1 || r.Bytes <= 0 {
		return 1
	}
	best := r.Time(1)
	for k := 2; k <= r.MaxChannels; k++ {
		best = min(best, r.Time(k))
	}
	for k := 1; ; k++ {
		if r.Time(k)*RingSlackDen <= best*RingSlackNum {
			return k
		}
	}
}
