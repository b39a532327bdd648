package main

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/mpiboot"
	"github.com/gccl/gccl/p2p"
)

// solver is one rank's part of one solver: its block of the n×n subdomain
// on a py×px Cartesian grid of the solver's ranks, and the device buffers
// of its halo exchange (four faces out, four halos in).
type solver struct {
	c       *comm.Comm
	isA     bool
	d       device.Device
	s       gccl.Stream
	cart    p2p.Cart
	cx, cy  int // this rank's grid coordinates
	x0, y0  int // its first interior cell in the subdomain
	blk     *block
	out, in uintptr // 2×(nx+ny) float64 each: faces in Halo order
	halos   []p2p.Halo
	scratch uintptr // one float64: the residual's AllReduce
}

// newSolver lays the solver's ranks out as a grid and allocates the buffers.
func newSolver(c *comm.Comm, n int, isA bool) (*solver, error) {
	py, px := grid(c.Count())
	if n%px != 0 || n%py != 0 {
		return nil, fmt.Errorf("a %d×%d subdomain does not split over a %d×%d grid of ranks; pick -n divisible by both", n, n, py, px)
	}
	v := &solver{c: c, isA: isA, d: c.Device(), cart: p2p.Cart{Dims: []int{py, px}}}
	co := v.cart.Coords(c.Rank())
	v.cy, v.cx = co[0], co[1]
	v.blk = newBlock(n/px, n/py)
	v.x0, v.y0 = v.cx*v.blk.nx, v.cy*v.blk.ny
	if isA && v.cx == 0 {
		v.blk.setCol(0, fill(v.blk.ny, 1)) // the hot wall
	}
	var err error
	if v.s, err = v.d.NewStream(); err != nil {
		return nil, err
	}
	nx, ny := v.blk.nx, v.blk.ny
	faces := 2 * (nx + ny)
	if v.out, err = v.d.Alloc(8 * faces); err != nil {
		return nil, err
	}
	if v.in, err = v.d.Alloc(8 * faces); err != nil {
		return nil, err
	}
	if v.scratch, err = v.d.Alloc(8); err != nil {
		return nil, err
	}
	off := 0
	for _, cnt := range []int{nx, nx, ny, ny} { // y lower, y upper, x lower, x upper
		v.halos = append(v.halos, p2p.Halo{Send: v.out + uintptr(8*off), Recv: v.in + uintptr(8*off), Count: cnt})
		off += cnt
	}
	return v, nil
}

// grid factors size ranks as py×px with px the largest divisor <= sqrt(size).
func grid(size int) (py, px int) {
	px = 1
	for f := 1; f*f <= size; f++ {
		if size%f == 0 {
			px = f
		}
	}
	return size / px, px
}

func (v *solver) close() {
	for _, p := range []uintptr{v.out, v.in, v.scratch} {
		if p != 0 {
			_ = v.d.Free(p)
		}
	}
	if v.s != 0 {
		_ = v.d.DestroyStream(v.s)
	}
}

// exchangeHalos packs the four faces, exchanges them with p2p.HaloExchange
// (one launch) and unpacks the halos of the neighbours that exist.
func (v *solver) exchangeHalos() error {
	b := v.blk
	faces := [][]float64{b.row(1), b.row(b.ny), b.col(1), b.col(b.nx)}
	if err := v.d.CopyIn(v.out, bytesOf(faces...)); err != nil {
		return err
	}
	if err := p2p.HaloExchange(v.c, v.cart, v.halos, gccl.Float64, v.s); err != nil {
		return err
	}
	if err := mpiboot.Wait(v.d, v.s, 0); err != nil {
		return err
	}
	got, err := download(v.d, v.in, 2*(b.nx+b.ny))
	if err != nil {
		return err
	}
	set := []func([]float64){
		func(x []float64) { b.setRow(0, x) }, func(x []float64) { b.setRow(b.ny+1, x) },
		func(x []float64) { b.setCol(0, x) }, func(x []float64) { b.setCol(b.nx+1, x) },
	}
	off := 0
	for k, h := range v.halos {
		if v.cart.Shift(v.c.Rank(), k/2, 2*(k%2)-1) >= 0 {
			set[k](got[off : off+h.Count])
		}
		off += h.Count
	}
	return nil
}

// residual sums x over the solver's ranks (gccl AllReduce).
func (v *solver) residual(x float64) (float64, error) {
	if err := v.d.CopyIn(v.scratch, bytesOf([]float64{x})); err != nil {
		return 0, err
	}
	if err := coll.AllReduce(v.c, v.scratch, v.scratch, 1, gccl.Float64, gccl.Sum, v.s); err != nil {
		return 0, err
	}
	if err := mpiboot.Wait(v.d, v.s, 0); err != nil {
		return 0, err
	}
	got, err := download(v.d, v.scratch, 1)
	return got[0], err
}

func bytesOf(vs ...[]float64) []byte {
	var out []byte
	for _, v := range vs {
		for _, x := range v {
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(x))
		}
	}
	return out
}

func download(d device.Device, p uintptr, n int) ([]float64, error) {
	raw := make([]byte, 8*n)
	if err := d.CopyOut(raw, p); err != nil {
		return nil, err
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	return out, nil
}
