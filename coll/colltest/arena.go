package colltest

import (
	"github.com/gccl/gccl/device"
)

// blockBytes is the size of an arena block; larger requests get their own.
const blockBytes = 4 << 20

// align is the alignment of every buffer the arena hands out.
const align = 64

// arena hands out device buffers from a few large allocations, so that a
// test of thousands of small operations does not map thousands of files.
type arena struct {
	dev    device.Device
	blocks []block
	cur    int // index of the block being cut
}

type block struct {
	base      uintptr
	size, off int
}

func (a *arena) alloc(n int) (uintptr, error) {
	n = (n + align - 1) &^ (align - 1)
	if n == 0 {
		n = align
	}
	for ; a.cur < len(a.blocks); a.cur++ {
		b := &a.blocks[a.cur]
		if b.size-b.off >= n {
			p := b.base + uintptr(b.off)
			b.off += n
			return p, nil
		}
	}
	size := max(n, blockBytes)
	p, err := a.dev.Alloc(size)
	if err != nil {
		return 0, err
	}
	a.blocks = append(a.blocks, block{base: p, size: size, off: n})
	a.cur = len(a.blocks) - 1
	return p, nil
}

func (a *arena) reset() {
	for i := range a.blocks {
		a.blocks[i].off = 0
	}
	a.cur = 0
}

func (a *arena) free() {
	for _, b := range a.blocks {
		_ = a.dev.Free(b.base)
	}
	a.blocks = nil
}
