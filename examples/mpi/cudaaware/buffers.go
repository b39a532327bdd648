package main

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/mpiboot"
)

// alloc makes buf (n×size float32), part and recv (n each) on d, and host
// copies of part and recv unless MPI may take d's memory (direct): GPU
// memory when MPI is CUDA-aware; the host backend's memory is host memory.
func alloc(d device.Device, n, size int, direct bool) (*buffers, error) {
	b := &buffers{d: d}
	var err error
	if b.buf, err = d.Alloc(4 * n * size); err == nil {
		if b.part, err = d.Alloc(4 * n); err == nil {
			b.recv, err = d.Alloc(4 * n)
		}
	}
	if err != nil || direct {
		return b, err
	}
	if b.host, err = device.Open(device.Host, 0); err != nil {
		return b, err
	}
	if b.hostPart, err = b.host.Alloc(4 * n); err != nil {
		return b, err
	}
	b.hostRecv, err = b.host.Alloc(4 * n)
	return b, err
}

func (b *buffers) free() {
	for _, p := range []uintptr{b.buf, b.part, b.recv} {
		if p != 0 {
			_ = b.d.Free(p)
		}
	}
	for _, p := range []uintptr{b.hostPart, b.hostRecv} {
		if p != 0 {
			_ = b.host.Free(p)
		}
	}
}

// how says which memory MPI moves.
func (b *buffers) how() string {
	if b.host == nil {
		return "the device buffers themselves"
	}
	return "host copies of the device buffers"
}

// shift sends part to the right neighbour and receives the left's into
// recv, through host copies when MPI cannot take device memory; it returns
// when both MPI requests have completed.
func (b *buffers) shift(mc *mpiboot.Comm, n int) error {
	rank, size := mc.Rank(), mc.Size()
	send, recv := b.part, b.recv
	if b.host != nil {
		send, recv = b.hostPart, b.hostRecv
		tmp := make([]byte, 4*n)
		if err := b.d.CopyOut(tmp, b.part); err != nil {
			return err
		}
		if err := b.host.CopyIn(send, tmp); err != nil {
			return err
		}
	}
	rr, err := mc.Irecv(recv, 4*n, (rank+size-1)%size, 1)
	if err != nil {
		return err
	}
	sr, err := mc.Isend(send, 4*n, (rank+1)%size, 1)
	if err != nil {
		return err
	}
	if err := firstErr(sr.Wait(), rr.Wait()); err != nil || b.host == nil {
		return err
	}
	tmp := make([]byte, 4*n)
	if err := b.host.CopyOut(tmp, recv); err != nil {
		return err
	}
	return b.d.CopyIn(b.recv, tmp)
}

// initial is rank r's buf: small integers, exact in float32 through the sums.
func initial(r, m int) []float32 {
	v := make([]float32, m)
	for i := range v {
		v[i] = float32((i*7 + r*3) % 17)
	}
	return v
}

// step is one round on the host: part[r] = block r of the sum of every buf;
// recv[r] = part[r-1]; every buf = the recv blocks in rank order.
func step(bufs [][]float32, n int) [][]float32 {
	size := len(bufs)
	next := make([]float32, n*size)
	for j := range size {
		src := (j + size - 1) % size // recv[j] is part[j-1]: block j-1 of the sum
		for i := range n {
			for _, b := range bufs {
				next[j*n+i] += b[src*n+i]
			}
		}
	}
	out := make([][]float32, size)
	for r := range out {
		out[r] = next
	}
	return out
}

// check compares device memory at p with want, every element exactly.
func check(d device.Device, p uintptr, want []float32) error {
	raw := make([]byte, 4*len(want))
	if err := d.CopyOut(raw, p); err != nil {
		return err
	}
	for i, w := range want {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); got != w {
			return fmt.Errorf("element %d is %v, want %v", i, got, w)
		}
	}
	return nil
}

func bytesOf(v []float32) []byte {
	out := make([]byte, 0, 4*len(v))
	for _, x := range v {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(x))
	}
	return out
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
