package gpu

import (
	"bytes"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/mpiboot"
)

var countsFlag = flag.String("gccl.counts", "0,1,7,1000003", "element counts run for every kind × type × operator × placement")

// largeBytes is the large size: 64 MiB per rank's count.
const largeBytes = 64 << 20

// collCase is one collective call.
type collCase struct {
	kind    string
	t       gccl.DataType
	op      gccl.RedOp
	count   int // NCCL's count: per rank for AllGather (send) and ReduceScatter (recv)
	root    int
	inPlace bool
	seed    uint64
}

func (c collCase) String() string {
	return fmt.Sprintf("%s %v %v count=%d root=%d inplace=%v", c.kind, c.t, c.op, c.count, c.root, c.inPlace)
}

var kinds = []string{"allreduce", "broadcast", "reduce", "allgather", "reducescatter"}

func reduces(kind string) bool {
	return kind == "allreduce" || kind == "reduce" || kind == "reducescatter"
}

func parseCounts(t *testing.T) []int {
	var out []int
	for _, f := range strings.Split(*countsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			t.Fatalf("-gccl.counts: bad count %q", f)
		}
		out = append(out, n)
	}
	return out
}

// collCases is every kind × type × operator × placement at each count, then
// 64 MiB for a subset of types and operators (all of them with -gccl.full).
func collCases(t *testing.T, nranks int) []collCase {
	var cases []collCase
	add := func(k string, dt gccl.DataType, op gccl.RedOp, n int, ip bool) {
		seed := uint64(len(cases)) + 1
		cases = append(cases, collCase{k, dt, op, n, int(seed*7+3) % nranks, ip, seed})
	}
	matrix := func(n func(gccl.DataType) int, types []gccl.DataType, ops []gccl.RedOp) {
		for _, k := range kinds {
			for _, dt := range types {
				kops := []gccl.RedOp{gccl.Sum}
				if reduces(k) {
					kops = ops
				}
				for _, op := range kops {
					add(k, dt, op, n(dt), false)
					add(k, dt, op, n(dt), true)
				}
			}
		}
	}
	for _, n := range parseCounts(t) {
		matrix(func(gccl.DataType) int { return n }, gccl.DataTypes(), gccl.RedOps())
	}
	large := func(dt gccl.DataType) int { return largeBytes / dt.Size() }
	switch {
	case !*largeRun:
	case *full:
		matrix(large, gccl.DataTypes(), gccl.RedOps())
	default:
		matrix(large, []gccl.DataType{gccl.Float32, gccl.BFloat16, gccl.Int8}, []gccl.RedOp{gccl.Sum, gccl.Max, gccl.Avg})
	}
	return cases
}

func (c collCase) sizes(nranks int) (send, recv int) {
	n := c.count * c.t.Size()
	switch c.kind {
	case "allgather":
		return n, n * nranks
	case "reducescatter":
		return n * nranks, n
	}
	return n, n
}

// expected is what rank's recvbuff must hold (nil: undefined).
func (c collCase) expected(rank, nranks int) []byte {
	sendLen, _ := c.sizes(nranks)
	in := inputs(c.seed, nranks, c.t, sendLen/c.t.Size())
	switch c.kind {
	case "allreduce":
		return reduce.Reference(in, c.t, c.op, 0)
	case "broadcast":
		return in[c.root]
	case "reduce":
		if rank != c.root {
			return nil
		}
		return reduce.Reference(in, c.t, c.op, 0)
	case "allgather":
		return bytes.Join(in, nil)
	}
	n := c.count * c.t.Size()
	return reduce.Reference(in, c.t, c.op, 0)[rank*n : (rank+1)*n]
}

// launch enqueues the case; in place, sendbuff lies where NCCL puts it.
func (c collCase) launch(cm *comm.Comm, bufs *buffers, s gccl.Stream) (recv uintptr, err error) {
	rank, nranks := cm.Rank(), cm.Count()
	sendLen, recvLen := c.sizes(nranks)
	mine := input(c.seed, rank, c.t, sendLen/c.t.Size())
	var send uintptr
	switch {
	case !c.inPlace:
		send, recv = bufs.alloc(sendLen, mine), bufs.alloc(recvLen, nil)
	case c.kind == "allgather":
		all := poisonBytes(recvLen)
		copy(all[rank*sendLen:], mine)
		recv = bufs.alloc(recvLen, all)
		send = recv + uintptr(rank*sendLen)
	case c.kind == "reducescatter":
		send = bufs.alloc(sendLen, mine)
		recv = send + uintptr(rank*recvLen)
	default:
		recv = bufs.alloc(sendLen, mine)
		send = recv
	}
	n := c.count
	switch c.kind {
	case "allreduce":
		return recv, coll.AllReduce(cm, send, recv, n, c.t, c.op, s)
	case "broadcast":
		return recv, coll.Broadcast(cm, send, recv, n, c.t, c.root, s)
	case "reduce":
		return recv, coll.Reduce(cm, send, recv, n, c.t, c.op, c.root, s)
	case "allgather":
		return recv, coll.AllGather(cm, send, recv, n, c.t, s)
	}
	return recv, coll.ReduceScatter(cm, send, recv, n, c.t, c.op, s)
}

// run launches, waits with MPI progress and checks every element.
func (c collCase) run(t *testing.T, cm *comm.Comm, s gccl.Stream) error {
	bufs := &buffers{t: t, d: cm.Device()}
	recv, err := c.launch(cm, bufs, s)
	if err == nil {
		err = mpiboot.Wait(cm.Device(), s, 0)
	}
	if err == nil {
		err = cm.AsyncError() // a failure a kernel or the host side reported
	}
	if err != nil {
		return fmt.Errorf("%v: %w", c, err)
	}
	want := c.expected(cm.Rank(), cm.Count())
	if want == nil {
		return nil
	}
	if err := reduce.Check(bufs.read(recv, len(want)), want, c.t, cm.Count()); err != nil {
		return fmt.Errorf("%v: %w", c, err)
	}
	return nil
}

// TestCollectives runs the whole matrix on one GPU per process, stopping
// every process at the first case that failed anywhere.
func TestCollectives(t *testing.T) {
	cm := world(t)
	s := (&buffers{t: t, d: cm.Device()}).stream()
	for _, c := range collCases(t, cm.Count()) {
		var failures []error
		t.Run(c.String(), func(t *testing.T) {
			if err := c.run(t, cm, s); err != nil {
				failures = append(failures, err)
			}
		})
		if !agree(t, failures) {
			return
		}
	}
}
