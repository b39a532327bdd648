package random

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/test/harness"
)

const (
	regionAlign = 256 // buffers start this far apart, plus an operation's offset
	guardBytes  = 64  // Poison after each buffer that must stay Poison
)

// placed is one operation of a batch laid out in a rank's arena: byte
// offsets of its buffers from the arena's start.
type placed struct {
	index      int // of the operation in the sequence
	o          op
	c          harness.Case // bound to the communicator
	rank, size int          // in the communicator
	send, recv int          // offsets of sendbuff and recvbuff
	sendLen    int
	recvLen    int
	end        int    // of the buffers (the guard follows)
	input      []byte // this rank's (fill)
	scalar     int    // offset of a device PreMulSum scalar, or -1
}

// arena is a bump allocator of byte offsets.
type arena struct{ used int }

// take returns the offset of n bytes starting align bytes past an aligned
// address, followed by a guard.
func (a *arena) take(n, align int) int {
	off := (a.used+regionAlign-1)/regionAlign*regionAlign + align
	a.used = off + n + guardBytes
	return off
}

// place lays out operation index o for this rank of a communicator of size
// ranks.
func place(a *arena, index int, o op, rank, size int) placed {
	c := o.bind(size)
	p := placed{index: index, o: o, c: c, rank: rank, size: size, scalar: -1}
	p.sendLen, p.recvLen = c.Sizes(size)
	align := o.align * c.T.Size()
	if c.InPlace {
		n := max(p.sendLen, p.recvLen)
		base := a.take(n, align)
		s, r := c.InPlaceOffsets(rank, size)
		p.send, p.recv, p.end = base+s, base+r, base+n
	} else {
		p.send = a.take(p.sendLen, align)
		p.recv = a.take(p.recvLen, align)
		p.end = p.recv + p.recvLen
	}
	if c.Op == harness.PreMulSum && o.deviceScale {
		p.scalar = a.take(c.T.Size(), 0)
	}
	return p
}

// fill computes p's input and writes it and the scalar into img, the
// arena's contents before the batch (Poison elsewhere).
func (p *placed) fill(img []byte) {
	p.input = harness.Input(p.c.Seed, p.rank, p.c.T, p.sendLen/p.c.T.Size())
	copy(img[p.send:], p.input)
	if p.scalar >= 0 {
		copy(img[p.scalar:], reduce.Encode(p.c.T, p.c.Scalar))
	}
}

// check compares the arena after the batch with what p must leave: the
// reference in recvbuff, the input still in an out-of-place sendbuff and
// Poison in the guard.
func (p placed) check(out []byte) error {
	if g := out[p.end : p.end+guardBytes]; !bytes.Equal(g, harness.PoisonBytes(guardBytes)) {
		return fmt.Errorf("wrote past the end of its buffer: guard bytes %x", g)
	}
	if !p.c.InPlace && !bytes.Equal(out[p.send:p.send+p.sendLen], p.input) {
		return fmt.Errorf("changed its sendbuff: %s", diff(out[p.send:p.send+p.sendLen], p.input, p.c.T, 0))
	}
	want := p.c.Expected(p.rank, p.size)
	if want == nil {
		return nil
	}
	got := out[p.recv : p.recv+len(want)]
	if p.c.Exact() {
		if !bytes.Equal(got, want) {
			return fmt.Errorf("wrong recvbuff: %s", diff(got, want, p.c.T, 0))
		}
		return nil
	}
	if err := reduce.Check(got, want, p.c.T, p.size); err != nil {
		return fmt.Errorf("wrong recvbuff: %s", diff(got, want, p.c.T, p.size))
	}
	return nil
}

// diff describes how got differs from want, elements of type t: how many
// are wrong and the first few, bit for bit (nranks 0) or within
// reduce.Check's tolerance for nranks ranks. Poison (a5...) marks an
// element nothing wrote.
func diff(got, want []byte, t gccl.DataType, nranks int) string {
	size := t.Size()
	var first []string
	wrong := 0
	for i := 0; i < len(got)/size; i++ {
		g, w := got[i*size:(i+1)*size], want[i*size:(i+1)*size]
		var err error
		if nranks == 0 {
			if !bytes.Equal(g, w) {
				err = fmt.Errorf("x")
			}
		} else {
			err = reduce.Check(g, w, t, nranks)
		}
		if err == nil {
			continue
		}
		wrong++
		if len(first) < 4 {
			s := fmt.Sprintf("[%d] got %x want %x", i, g, w)
			if t.IsFloat() {
				s += " (" + values(g, w, t) + ")"
			}
			first = append(first, s)
		}
	}
	return fmt.Sprintf("%d of %d elements wrong: %s", wrong, len(got)/size, strings.Join(first, "; "))
}

// values formats one floating-point element of got and want as numbers,
// as reduce.Check words them.
func values(g, w []byte, t gccl.DataType) string {
	err := reduce.Check(g, w, t, 0)
	if err == nil {
		return "values within tolerance"
	}
	if _, v, ok := strings.Cut(err.Error(), ": got "); ok {
		return "got " + v
	}
	return err.Error()
}
