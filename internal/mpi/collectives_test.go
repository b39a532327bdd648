//go:build !mpich

// These tests check the MPI baseline of gccl-perf (MPI's own collectives),
// not gccl. They are built against Open MPI only: Debian's MPICH 4.0.2 gets
// the baseline itself wrong, shown with plain C programs under
// mpiexec.mpich: MPI_Allreduce of MPI_UINT32_T with MPI_MAX compares as
// signed (max of {2379519785, 1572008551} gives 1572008551), and a
// MPI_Reduce_scatter_block in place followed by MPI_Reduce of MPI_FLOAT with
// MPI_MAX at rotating roots segfaults inside UCX. gccl-perf's -baseline mpi
// is documented for Open MPI.

package mpi

import (
	"math/rand/v2"
	"testing"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var nativeTypes = []gccl.DataType{gccl.Int8, gccl.Uint8, gccl.Int32, gccl.Uint32, gccl.Int64, gccl.Uint64, gccl.Float32, gccl.Float64}

// collInput is rank's random input of n elements for test case seed; every
// rank can recompute every other rank's. 8-bit values are ±1 (int8) or 0/1
// (uint8): Open MPI's op/avx component saturates 8-bit sums that overflow
// instead of wrapping (open-mpi/ompi#8045, closed as wontfix), so the tests
// keep them in range and check wrapping only where MPI defines it.
func collInput(rank, n int, t gccl.DataType, seed uint64) []byte {
	b := make([]byte, n*t.Size())
	reduce.Fill(b, t, rand.New(rand.NewPCG(seed, uint64(rank)+1)))
	if t.Size() == 1 {
		for i, x := range b {
			b[i] = x >> 7
			if t == gccl.Int8 && b[i] == 0 {
				b[i] = 0xFF
			}
		}
	}
	return b
}

// hostBuf allocates shared host memory holding data, or poisoned (0xA5) bytes when data is nil.
func hostBuf(t *testing.T, n int, data []byte) (uintptr, []byte) {
	d, err := device.NewHost(0, 0)
	require.NoError(t, err)
	p, err := d.Alloc(n)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Free(p) })
	b := device.HostBytes(p, n)
	for i := range b {
		b[i] = 0xA5
	}
	copy(b, data)
	return p, b
}

func newColl(t *testing.T) *Collectives {
	c, err := NewCollectives()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	w := world(t)
	require.Equal(t, w.Rank(), c.Rank())
	require.Equal(t, w.Size(), c.Size())
	return c
}

func TestCollectivesAllreduceEveryTypeAndOp(t *testing.T) {
	c := newColl(t)
	n := 1003
	for _, typ := range nativeTypes {
		for _, op := range []gccl.RedOp{gccl.Sum, gccl.Prod, gccl.Max, gccl.Min} {
			for _, inplace := range []bool{false, true} {
				seed := uint64(typ)*10 + uint64(op)
				ins := make([][]byte, c.Size())
				for r := range ins {
					ins[r] = collInput(r, n, typ, seed)
				}
				send, _ := hostBuf(t, len(ins[0]), ins[c.Rank()])
				recv, got := hostBuf(t, len(ins[0]), nil)
				if inplace {
					recv, got = send, device.HostBytes(send, len(ins[0]))
				}
				took, err := c.Allreduce(send, recv, n, typ, op)
				require.NoError(t, err)
				require.Greater(t, took.Nanoseconds(), int64(0))
				require.NoError(t, reduce.Check(got, reduce.Reference(ins, typ, op, 0), typ, c.Size()), "%v %v inplace=%v", typ, op, inplace)
			}
		}
	}
}

func TestCollectivesAllgatherAndAlltoall(t *testing.T) {
	c := newColl(t)
	n, size, rank := 517, c.Size(), c.Rank()
	typ := gccl.Int32
	for _, inplace := range []bool{false, true} {
		recv, got := hostBuf(t, n*size*4, nil)
		send, _ := hostBuf(t, n*4, collInput(rank, n, typ, 1))
		if inplace {
			send = recv + uintptr(rank*n*4)
			copy(got[rank*n*4:], collInput(rank, n, typ, 1))
		}
		_, err := c.Allgather(send, recv, n, typ)
		require.NoError(t, err)
		for r := range size {
			require.Equal(t, collInput(r, n, typ, 1), got[r*n*4:(r+1)*n*4], "block %d, inplace=%v", r, inplace)
		}
	}
	// Alltoall: rank r's block j is collInput(r, ...)[j]; rank j receives it as its block r.
	send, _ := hostBuf(t, n*size*8, collInput(rank, n*size, gccl.Float64, 2))
	recv, got := hostBuf(t, n*size*8, nil)
	_, err := c.Alltoall(send, recv, n, gccl.Float64)
	require.NoError(t, err)
	for j := range size {
		want := collInput(j, n*size, gccl.Float64, 2)[rank*n*8 : (rank+1)*n*8]
		require.Equal(t, want, got[j*n*8:(j+1)*n*8], "block from rank %d", j)
	}
}

func TestCollectivesReduceScatterAndReduce(t *testing.T) {
	c := newColl(t)
	n, size, rank := 301, c.Size(), c.Rank()
	typ := gccl.Float32
	ins := make([][]byte, size)
	for r := range ins {
		ins[r] = collInput(r, n*size, typ, 3)
	}
	want := reduce.Reference(ins, typ, gccl.Sum, 0)
	send, _ := hostBuf(t, len(ins[0]), ins[rank])
	recv, got := hostBuf(t, n*4, nil)
	_, err := c.ReduceScatterBlock(send, recv, n, typ, gccl.Sum)
	require.NoError(t, err)
	require.NoError(t, reduce.Check(got, want[rank*n*4:(rank+1)*n*4], typ, size))

	// MPI's in-place layout: the input is all of recv, the result at its start.
	buf, all := hostBuf(t, len(ins[0]), ins[rank])
	_, err = c.ReduceScatterBlock(buf, buf, n, typ, gccl.Sum)
	require.NoError(t, err)
	require.NoError(t, reduce.Check(all[:n*4], want[rank*n*4:(rank+1)*n*4], typ, size))

	for root := range size {
		for _, inplace := range []bool{false, true} {
			send, sendBytes := hostBuf(t, len(ins[0]), ins[rank])
			recv, got := hostBuf(t, len(ins[0]), nil)
			if inplace {
				recv, got = send, sendBytes
			}
			_, err := c.Reduce(send, recv, n*size, typ, gccl.Max, root)
			require.NoError(t, err)
			if rank == root {
				require.NoError(t, reduce.Check(got, reduce.Reference(ins, typ, gccl.Max, 0), typ, size))
			} else if !inplace {
				require.Equal(t, byte(0xA5), got[0], "a non-root's recv is not written")
			}
		}
	}
}

func TestCollectivesBcastAndSendrecv(t *testing.T) {
	c := newColl(t)
	n, size, rank := 4097, c.Size(), c.Rank()
	for root := range size {
		var data []byte
		if rank == root {
			data = collInput(root, n, gccl.Uint8, 4)
		}
		buf, got := hostBuf(t, n, data)
		_, err := c.Bcast(buf, n, gccl.Uint8, root)
		require.NoError(t, err)
		require.Equal(t, collInput(root, n, gccl.Uint8, 4), got, "root %d", root)
	}
	next, prev := (rank+1)%size, (rank+size-1)%size
	send, _ := hostBuf(t, n*8, collInput(rank, n, gccl.Int64, 5))
	recv, got := hostBuf(t, n*8, nil)
	_, err := c.Sendrecv(send, n, next, recv, n, prev, gccl.Int64)
	require.NoError(t, err)
	require.Equal(t, collInput(prev, n, gccl.Int64, 5), got)
}

func TestCollectivesBadArguments(t *testing.T) {
	c := newColl(t)
	buf, _ := hostBuf(t, 64, nil)
	size := c.Size()
	argOf := func(err error) string {
		var e *gccl.Error
		require.ErrorAs(t, err, &e)
		return e.Arg
	}
	for _, typ := range []gccl.DataType{gccl.Float16, gccl.BFloat16, gccl.Float8E4M3, gccl.Float8E5M2, gccl.DataType(99)} {
		_, err := c.Allreduce(buf, buf, 4, typ, gccl.Sum)
		require.ErrorIs(t, err, gccl.ErrInvalidArgument)
		assert.Equal(t, "datatype", argOf(err))
		require.Error(t, MPIType(typ))
	}
	_, err := c.Allreduce(buf, buf, 4, gccl.Float32, gccl.Avg)
	require.ErrorIs(t, err, gccl.ErrInvalidArgument)
	assert.Equal(t, "op", argOf(err))
	require.Error(t, MPIOp(gccl.Avg))
	_, err = c.Allreduce(0, buf, 4, gccl.Float32, gccl.Sum)
	assert.Equal(t, "send", argOf(err))
	_, err = c.Allgather(buf, buf, -1, gccl.Int8)
	assert.Equal(t, "count", argOf(err))
	_, err = c.Bcast(buf, 4, gccl.Int8, size)
	assert.Equal(t, "root", argOf(err))
	_, err = c.Reduce(buf, buf, 4, gccl.Int8, gccl.Sum, -1)
	assert.Equal(t, "root", argOf(err))
	_, err = c.Sendrecv(buf, 4, size, buf, 4, 0, gccl.Int8)
	assert.Equal(t, "dest", argOf(err))
	_, err = c.Alltoall(buf, 0, 4, gccl.Int8)
	assert.Equal(t, "recv", argOf(err))
	for _, typ := range nativeTypes {
		require.NoError(t, MPIType(typ))
	}

	// Still in step: a valid call works on every rank, then Close refuses more.
	_, err = c.Bcast(buf, 64, gccl.Uint8, 0)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	_, err = c.Bcast(buf, 1, gccl.Uint8, 0)
	require.ErrorIs(t, err, gccl.ErrInvalidUsage)
	require.NoError(t, (*Collectives)(nil).Close())
}
