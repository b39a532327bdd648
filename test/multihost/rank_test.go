package multihost

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/group"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/internal/testbed"
	"github.com/gccl/gccl/test/harness"
	"github.com/stretchr/testify/require"
)

// The environment the parent tests give their ranks.
const (
	roleEnv     = "MULTIHOST_ROLE"     // matrix, kill or cut
	workloadEnv = "MULTIHOST_WORKLOAD" // kill's workload (test/fault.Workloads)
	victimEnv   = "MULTIHOST_VICTIM"   // kill's victim rank
)

// opTimeout is the deadline of the ranks' communicators.
const opTimeout = 30 * time.Second

// TestRank is one rank of a job TestMatrix, TestKillRank or TestCutLink
// started in a bed; anywhere else it skips.
func TestRank(t *testing.T) {
	place, err := testbed.PlaceFromEnv()
	if err != nil {
		t.Skip("runs only as a rank of a bed that TestMatrix or TestKillRank started")
	}
	timeout := opTimeout
	if role := os.Getenv(roleEnv); role == "kill" || role == "cut" {
		timeout = killTimeout
	}
	cfg := &comm.Config{Backend: device.Host, Timeout: timeout, Name: "multihost"}
	cm, err := place.Join(cfg, time.Minute)
	require.NoError(t, err, "joining the communicator (socket bootstrap)")
	host, _ := os.Hostname()
	t.Logf("rank %d of %d on %s (GCCL_NET=%q)", cm.Rank(), cm.Count(), host, os.Getenv("GCCL_NET"))
	switch role := os.Getenv(roleEnv); role {
	case "matrix":
		t.Cleanup(func() { require.NoError(t, cm.Close()) })
		runMatrix(t, cm)
	case "kill":
		runKill(t, cm, place)
	case "cut":
		runCut(t, cm, place)
	default:
		t.Fatalf("%s=%q: want matrix, kill or cut", roleEnv, role)
	}
}

// runMatrix runs the collectives, then the point-to-point patterns, then a
// group, checking every element.
func runMatrix(t *testing.T, cm *comm.Comm) {
	d := cm.Device()
	s := harness.NewBuffers(t, d).Stream()
	sc := harness.NewScratch(t, d)
	n, rank := cm.Count(), cm.Rank()
	var failures []error
	var small, large time.Duration
	for _, c := range collCases(n) {
		start := time.Now()
		data := c.Prepare(n)
		recv, err := data.Launch(cm, sc, s)
		if err == nil {
			err = d.Synchronize(s)
		}
		if err == nil {
			err = cm.AsyncError()
		}
		if err != nil { // the ranks are out of step now: stop
			t.Fatalf("%v: %v", c, err)
		}
		if err := data.Check(rank, sc, recv); err != nil {
			failures = append(failures, fmt.Errorf("%v: %w", c, err))
		}
		if c.Count > 1000 {
			large += time.Since(start)
		} else {
			small += time.Since(start)
		}
	}
	for _, err := range failures[:min(len(failures), 10)] {
		t.Error(err)
	}
	t.Logf("%d collectives checked, %d wrong (%v in the small ones, %v in the large)",
		len(collCases(n)), len(failures), small.Round(time.Millisecond), large.Round(time.Millisecond))
	for _, c := range p2pCases(n) {
		t.Run(c.String(), func(t *testing.T) { runP2P(t, cm, c, s) })
	}
	t.Run("group", func(t *testing.T) { runGroup(t, cm, s) })
}

// runP2P runs one point-to-point pattern in fresh buffers.
func runP2P(t *testing.T, cm *comm.Comm, c harness.Case, s gccl.Stream) {
	bufs := harness.NewBuffers(t, cm.Device())
	recv, err := c.Launch(cm, bufs, s)
	if err == nil {
		err = cm.Device().Synchronize(s)
	}
	require.NoError(t, err)
	want := c.Expected(cm.Rank(), cm.Count())
	require.NoError(t, reduce.Check(bufs.Read(recv, len(want)), want, c.T, cm.Count()))
}

// runGroup runs collectives and a send/receive in one group.
func runGroup(t *testing.T, cm *comm.Comm, s gccl.Stream) {
	n, rank := cm.Count(), cm.Rank()
	bufs := harness.NewBuffers(t, cm.Device())
	cases := []harness.Case{
		{Kind: "allreduce", T: gccl.Float32, Op: gccl.Sum, Count: 1000, Seed: 901},
		{Kind: "broadcast", T: gccl.Int32, Count: 7, Root: n - 1, Seed: 902},
		{Kind: "reducescatter", T: gccl.BFloat16, Op: gccl.Max, Count: 1001, Seed: 903},
		{Kind: "sendrecv", T: gccl.Int8, Count: 1_000_003, Root: 0, Peer: n - 1, Seed: 904},
		{Kind: "allgather", T: gccl.Float16, Count: 33, Seed: 905},
	}
	g := group.New()
	calls := make([]harness.Call, len(cases))
	for i, c := range cases {
		send, recv := c.Sizes(n)
		calls[i] = harness.Call{Case: c, RedOp: c.Op,
			Send: bufs.Alloc(send, harness.Input(c.Seed, rank, c.T, send/c.T.Size())),
			Recv: bufs.Alloc(recv, nil)}
		calls[i].Add(g, cm, s)
	}
	require.NoError(t, g.End())
	require.NoError(t, cm.Device().Synchronize(s))
	for _, c := range calls {
		want := c.Expected(rank, n)
		if want != nil {
			require.NoError(t, reduce.Check(bufs.Read(c.Recv, len(want)), want, c.T, n), "%v", c.Case)
		}
	}
}

// counts are the element counts of every collective.
var counts = []int{0, 1, 7, 1_000_003}

// typeClasses are the kinds of data: integers, floats, and 16-bit
// floats; each case takes one type of its class, alternating.
var typeClasses = [][]gccl.DataType{
	{gccl.Int32, gccl.Uint8, gccl.Int64},
	{gccl.Float32, gccl.Float64},
	{gccl.Float16, gccl.BFloat16},
}

// collCases is every collective × type class × placement × count, the
// operators taking turns (the costly Prod only at the small counts), the
// large count thinned out on the larger beds (keepLarge).
func collCases(nranks int) []harness.Case {
	var cases []harness.Case
	small, large := gccl.RedOps(), []gccl.RedOp{gccl.Sum, gccl.Avg, gccl.Max}
	for _, k := range harness.Kinds {
		for ci, class := range typeClasses {
			for ni, n := range counts {
				for pi, inPlace := range []bool{false, true} {
					if n > 1000 && !keepLarge(nranks, k, ci, pi, len(cases)) {
						continue
					}
					i := len(cases)
					ops := small
					if n > 1000 {
						ops = large
					}
					cases = append(cases, harness.Case{Kind: k, T: class[(ni+ci)%len(class)], Op: ops[i%len(ops)],
						Count: n, Root: (i*5 + 1) % nranks, InPlace: inPlace, Seed: uint64(i) + 1})
				}
			}
		}
	}
	return cases
}

// keepLarge reports whether the matrix of nranks ranks keeps the large
// count of kind in type class ci and placement pi (i cases so far). On the
// 2-core CI, more than 6 ranks run it for one class and placement per
// collective, taking turns, and more than 8 (12 busy processes on 2 cores
// take minutes) for one float AllReduce only.
func keepLarge(nranks int, kind string, ci, pi, i int) bool {
	switch {
	case nranks > 8:
		return kind == "allreduce" && ci == 1 && pi == 0
	case nranks > 6:
		return ci == i%3 && pi == ci%2
	}
	return true
}

// p2pCases is every point-to-point pattern at a small count and, for the
// ones moving one block per rank, the large count; sendrecv goes from the
// first rank to the last (another host).
func p2pCases(nranks int) []harness.Case {
	var cases []harness.Case
	for i, k := range harness.P2PKinds {
		counts := []int{0, 7}
		if k == "sendrecv" || k == "shift" || k == "neighbor" {
			counts = append(counts, 1_000_003)
		}
		for _, n := range counts {
			class := typeClasses[(i+n)%len(typeClasses)]
			cases = append(cases, harness.Case{Kind: k, T: class[i%len(class)], Count: n,
				Root: (i * 3) % nranks, Peer: nranks - 1 - (i*3)%nranks, Seed: uint64(100 + len(cases))})
		}
	}
	return cases
}
