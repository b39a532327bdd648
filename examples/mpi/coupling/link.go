package main

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/coll"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/mpiboot"
)

// link is the interface between the solvers: a gccl communicator of the
// ranks along it (A's last column of ranks, B's first), made from an MPI
// communicator split off the job, and a device vector of both interface
// columns (2n float64: A's, then B's). Ranks off the interface have none.
type link struct {
	mc  *mpiboot.Comm
	c   *comm.Comm
	d   device.Device
	buf uintptr
	n   int
}

func newInterface(v *solver, n int, cfg *comm.Config) (*link, error) {
	on := (v.isA && v.cx == v.cart.Dims[1]-1) || (!v.isA && v.cx == 0)
	color := -1
	if on {
		color = 0
	}
	l := &link{n: n, d: v.d}
	var err error
	if l.mc, err = mpiboot.SplitWorld(color, 0); err != nil || !on {
		return l, err
	}
	if l.c, err = l.mc.NewComm(cfg); err != nil {
		return l, err
	}
	l.buf, err = v.d.Alloc(8 * 2 * n)
	return l, err
}

// exchange gives each side the other's interface column: every interface
// rank writes its own segment into a zeroed vector and one AllReduce (sum)
// assembles both columns everywhere (adding zeros is exact).
func (l *link) exchange(v *solver) error {
	if l.c == nil {
		return nil
	}
	b := v.blk
	vec := make([]float64, 2*l.n)
	if v.isA {
		copy(vec[v.y0:], b.col(b.nx))
	} else {
		copy(vec[l.n+v.y0:], b.col(1))
	}
	if err := v.d.CopyIn(l.buf, bytesOf(vec)); err != nil {
		return err
	}
	if err := coll.AllReduce(l.c, l.buf, l.buf, 2*l.n, gccl.Float64, gccl.Sum, v.s); err != nil {
		return err
	}
	if err := mpiboot.Wait(v.d, v.s, 0); err != nil {
		return err
	}
	got, err := download(v.d, l.buf, 2*l.n)
	if err != nil {
		return err
	}
	if v.isA {
		b.setCol(b.nx+1, got[l.n+v.y0:])
	} else {
		b.setCol(0, got[v.y0:])
	}
	return nil
}

func (l *link) close() {
	if l.buf != 0 {
		_ = l.d.Free(l.buf)
	}
	_ = l.c.Close()
	_ = l.mc.Free()
}
