package random

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// drawStreams draws the rank's streams and the two or three of them each
// communicator uses. The communicators draw from fewer streams than they
// use between them, so at least two share a stream (before the limits):
// one-by-one launches then queue several communicators' operations on one
// stream, and a group holds them as well as one communicator's operations
// on several streams. At most perComm streams per communicator and total
// per rank (0: no limit); neither limit changes what the rng draws, so the
// operations stay the same. It returns how many streams a rank makes and,
// per communicator, the indices of its streams among them.
func drawStreams(rng *rand.Rand, perComm, total int) (int, [numComms][]int) {
	var want [numComms]int
	sum, most := 0, 0
	for i := range want {
		want[i] = 2 + rng.IntN(2)
		sum, most = sum+want[i], max(most, want[i])
	}
	pool := most + rng.IntN(sum-most) // fewer than sum: some are shared
	var lists [numComms][]int
	renumber := map[int]int{} // drawn index → index among the streams made
	for i := range lists {
		drawn := rng.Perm(pool)[:want[i]]
		if perComm > 0 {
			drawn = drawn[:min(len(drawn), perComm)]
		}
		for _, d := range drawn {
			if total > 0 {
				d %= total
			}
			n, ok := renumber[d]
			if !ok {
				n = len(renumber)
				renumber[d] = n
			}
			if !slices.Contains(lists[i], n) {
				lists[i] = append(lists[i], n)
			}
		}
	}
	return len(renumber), lists
}

// addOrder is the order in which rank adds group batch b's operations to
// its group: a random interleaving of the communicators' operations, drawn
// per rank, that keeps each communicator's operations in the drawn order.
// As in NCCL only each communicator's order must match across ranks, even
// where communicators share a stream.
func (b batch) addOrder(rank int) []int {
	rng := rand.New(rand.NewPCG(b.ops[0].c.Seed, 0x0de7+uint64(rank)))
	var queues [numComms][]int
	for i, o := range b.ops {
		queues[o.comm] = append(queues[o.comm], i)
	}
	order := make([]int, 0, len(b.ops))
	for left := len(b.ops); left > 0; left-- {
		j := rng.IntN(left) // uniform over the interleavings
		for c := range queues {
			if j < len(queues[c]) {
				order = append(order, queues[c][0])
				queues[c] = queues[c][1:]
				break
			}
			j -= len(queues[c])
		}
	}
	return order
}

// TestDrawGroups checks that the sequences' groups put one communicator on
// several streams and several communicators on one stream, added in orders
// that differ between ranks but never within a communicator.
func TestDrawGroups(t *testing.T) {
	var manyStreams, sharedStream, reordered int // groups
	for seed := uint64(1); seed <= 10; seed++ {
		seq := draw(seed, 300, 4, 1<<20, 32/4)
		for c, cs := range seq.commStreams {
			if len(cs) < 1 || len(cs) > 3 || slices.ContainsFunc(cs, func(s int) bool { return s >= seq.streams }) {
				t.Fatalf("seed %d: the %s communicator's streams %v of %d", seed, commNames[c], cs, seq.streams)
			}
		}
		for _, b := range seq.batches {
			if !b.group {
				continue
			}
			streamsOf, commsOn := map[int]map[int]bool{}, map[int]map[int]bool{}
			for _, o := range b.ops {
				addTo(streamsOf, o.comm, o.stream)
				addTo(commsOn, o.stream, o.comm)
			}
			if slices.ContainsFunc(slices.Collect(maps.Values(streamsOf)), func(m map[int]bool) bool { return len(m) > 1 }) {
				manyStreams++
			}
			shares := slices.ContainsFunc(slices.Collect(maps.Values(commsOn)), func(m map[int]bool) bool { return len(m) > 1 })
			if shares {
				sharedStream++
			}
			first, differ := b.addOrder(0), false
			for rank := range 4 {
				order := b.addOrder(rank)
				differ = differ || !slices.Equal(order, first)
				last := map[int]int{}
				for _, i := range order {
					if j, ok := last[b.ops[i].comm]; ok && j > i {
						t.Fatalf("seed %d: rank %d adds op %d after op %d of one communicator", seed, rank, j, i)
					}
					last[b.ops[i].comm] = i
				}
				if len(order) != len(b.ops) {
					t.Fatalf("seed %d: rank %d adds %d of %d ops", seed, rank, len(order), len(b.ops))
				}
			}
			if shares && differ {
				reordered++
			}
		}
	}
	t.Logf("groups with a communicator on several streams: %d, with a stream of several communicators: %d, that too with ranks adding in different orders: %d",
		manyStreams, sharedStream, reordered)
	if manyStreams < 10 || sharedStream < 10 || reordered < 10 {
		t.Error("too few groups of each kind")
	}
}

func addTo(m map[int]map[int]bool, k, v int) {
	if m[k] == nil {
		m[k] = map[int]bool{}
	}
	m[k][v] = true
}
