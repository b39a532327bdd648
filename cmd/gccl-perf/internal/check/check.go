package check

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/layout"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/reduce"
)

// chunkElems is the granule of the inputs' random streams: element i of a
// rank's input comes from stream i/chunkElems, so any range of any rank's
// input can be made without making what comes before it.
const chunkElems = 1024

// pieceElems bounds the elements reduced at once while computing an
// expected result, so that the inputs of every rank need not be held whole.
const pieceElems = 1 << 18

// Inputs makes the random inputs (reduce.Fill's values: safe for every
// operator) of every rank for one seed.
type Inputs struct {
	Seed uint64
	Type gccl.DataType
}

// of returns elements [from, from+n) of rank's input.
func (in Inputs) of(rank, from, n int) []byte {
	sz := in.Type.Size()
	first, last := from/chunkElems, (from+n+chunkElems-1)/chunkElems
	buf := make([]byte, (last-first)*chunkElems*sz)
	for c := first; c < last; c++ {
		rng := rand.New(rand.NewPCG(in.Seed^uint64(rank+1)<<40, uint64(c)))
		reduce.Fill(buf[(c-first)*chunkElems*sz:(c-first+1)*chunkElems*sz], in.Type, rng)
	}
	off := (from - first*chunkElems) * sz
	return buf[off : off+n*sz]
}

// expect computes the result described by srcs into want (the rank's whole
// recv region) and marks the elements it wrote in known.
func (in Inputs) expect(want []byte, known []bool, srcs []source, op gccl.RedOp) {
	sz := in.Type.Size()
	for _, s := range srcs {
		for done := 0; done < s.n; done += pieceElems {
			n := min(pieceElems, s.n-done)
			parts := make([][]byte, len(s.ranks))
			for i, r := range s.ranks {
				parts[i] = in.of(r, s.from+done, n)
			}
			dst := want[(s.at+done)*sz : (s.at+done+n)*sz]
			if len(parts) == 1 {
				copy(dst, parts[0])
			} else {
				copy(dst, reduce.Reference(parts, in.Type, op, 0))
			}
			for i := range n {
				known[s.at+done+i] = true
			}
		}
	}
}

// Checker counts the elements of got that differ from want; tests replace
// it to show that a wrong result is counted.
type Checker func(got, want []byte, t gccl.DataType, nranks int) int64

// CountWrong is the checker: reduce.Check's rule (exact for integers, a
// relative tolerance of (nranks+1) epsilons for floats), element by element.
func CountWrong(got, want []byte, t gccl.DataType, nranks int) int64 {
	if reduce.Check(got, want, t, nranks) == nil {
		return 0
	}
	if len(got) != len(want) {
		return int64(max(len(got), len(want)) / t.Size())
	}
	var wrong int64
	sz := t.Size()
	for i := 0; i < len(got); i += sz {
		if reduce.Check(got[i:i+sz], want[i:i+sz], t, nranks) != nil {
			wrong++
		}
	}
	return wrong
}

// Staged is one size's data on one rank: the expected result and which of
// its elements are defined.
type Staged struct {
	want  []byte
	known []bool
}

// Stage writes the rank's input into its send region and poisons the recv
// region, then returns the expected result. Poison is the complement of
// the expected value, so an element the operation never writes cannot pass;
// undefined elements (a non-root's reduce result) get 0xA5. In place, the
// input is written last, over the poison of the overlapping part.
func Stage(d device.Device, base uintptr, l layout.Layout, in Inputs, c lib.Call) (Staged, error) {
	sz := c.Type.Size()
	st := Staged{want: make([]byte, l.RecvElems*sz), known: make([]bool, l.RecvElems)}
	in.expect(st.want, st.known, expected(l, c.Rank, c.NRanks, c.Root), c.RedOp)
	poison := make([]byte, len(st.want))
	for i := range poison {
		poison[i] = 0xA5
		if st.known[i/sz] {
			poison[i] = ^st.want[i]
		}
	}
	send, recv := l.Place(base, c.Type)
	if err := d.CopyIn(recv, poison); err != nil {
		return st, err
	}
	return st, d.CopyIn(send, in.of(c.Rank, 0, l.SendElems))
}

// Verify reads the recv region back and counts the wrong elements among the
// defined ones.
func Verify(d device.Device, recv uintptr, st Staged, t gccl.DataType, nranks int, check Checker) (int64, error) {
	got := make([]byte, len(st.want))
	if err := d.CopyOut(got, recv); err != nil {
		return 0, err
	}
	sz := t.Size()
	var wrong int64
	for i := 0; i < len(st.known); {
		if !st.known[i] {
			i++
			continue
		}
		j := i
		for j < len(st.known) && st.known[j] {
			j++
		}
		wrong += check(got[i*sz:j*sz], st.want[i*sz:j*sz], t, nranks)
		i = j
	}
	return wrong, nil
}

// FirstWrong reads the recv region back and describes its first wrong
// element among the defined ones ("element i of T: got X, want Y"), ""
// when there is none: what gccl-perf prints beside a count of wrong
// elements, so that a failure says what it got.
func FirstWrong(d device.Device, recv uintptr, st Staged, t gccl.DataType, nranks int) (string, error) {
	got := make([]byte, len(st.want))
	if err := d.CopyOut(got, recv); err != nil {
		return "", err
	}
	sz := t.Size()
	for i, known := range st.known {
		if !known {
			continue
		}
		if err := reduce.Check(got[i*sz:(i+1)*sz], st.want[i*sz:(i+1)*sz], t, nranks); err != nil {
			msg := err.Error()
			var ge *gccl.Error
			if errors.As(err, &ge) {
				_, msg, _ = strings.Cut(ge.Msg, ": ") // "element 0 of T: got X, want Y"
			}
			return fmt.Sprintf("element %d of %v: %s", i, t, msg), nil
		}
	}
	return "", nil
}
