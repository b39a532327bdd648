package viahost

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/engine"
	"github.com/gccl/gccl/internal/engine/enginetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// randInt32s are count random int32 from (seed, rank), and their bytes.
func randInt32s(seed uint64, rank, count int) ([]int32, []byte) {
	rng := rand.New(rand.NewPCG(seed, uint64(rank)))
	v, b := make([]int32, count), make([]byte, 4*count)
	for i := range v {
		v[i] = int32(rng.Uint32() >> 4)
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v[i]))
	}
	return v, b
}

// sums is the all-reduce of n ranks' randInt32s(seed).
func sums(seed uint64, n, count int) []byte {
	total := make([]int32, count)
	for r := range n {
		v, _ := randInt32s(seed, r, count)
		for i := range v {
			total[i] += v[i]
		}
	}
	b := make([]byte, 4*count)
	for i, v := range total {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return b
}

// TestViaHostGroupAnyCommOrder: a group over communicators A and B on one
// stream, rank 1 sending to rank 0 on A, every rank all-reducing on both,
// rank 2 adding B first. Each launch waits on the stream for its host
// side: in the order the ranks added them (before), rank 0's A waited for
// rank 2's A, queued behind rank 2's B, which waited for rank 0's B,
// queued behind its A (timeout). In ID order every stream agrees.
func TestViaHostGroupAnyCommOrder(t *testing.T) {
	const n, count = 3, 1001
	devs, streams, _ := fakeGPUs(t, n)
	ea, eb := viaHostComm(t, devs, 2), viaHostComm(t, devs, 1)
	poison := bytes.Repeat([]byte{0xA5}, 4*count)
	outA, outB, got := make([]uintptr, n), make([]uintptr, n), make([]uintptr, n)
	for r, d := range devs {
		s := streams[r]
		_, inA := randInt32s(1, r, count)
		_, inB := randInt32s(2, r, count)
		outA[r], outB[r] = devBuf(t, d, poison), devBuf(t, d, poison)
		arA := engine.Op{Kind: algo.AllReduce, Send: devBuf(t, d, inA), Recv: outA[r], Count: count, Type: gccl.Int32, Op: gccl.Sum, Stream: s}
		arB := engine.Op{Kind: algo.AllReduce, Send: devBuf(t, d, inB), Recv: outB[r], Count: count, Type: gccl.Int32, Op: gccl.Sum, Stream: s}
		var works []engine.Work
		switch r {
		case 0:
			got[r] = devBuf(t, d, poison)
			recv := engine.Op{Kind: algo.P2PRecv, Recv: got[r], Count: count, Type: gccl.Int32, Peer: 1, Stream: s}
			works = []engine.Work{{Engine: ea[r], Ops: []engine.Op{recv, arA}}, {Engine: eb[r], Ops: []engine.Op{arB}}}
		case 1:
			send := engine.Op{Kind: algo.P2PSend, Send: devBuf(t, d, inA), Count: count, Type: gccl.Int32, Peer: 0, Stream: s}
			works = []engine.Work{{Engine: ea[r], Ops: []engine.Op{send, arA}}, {Engine: eb[r], Ops: []engine.Op{arB}}}
		default:
			works = []engine.Work{{Engine: eb[r], Ops: []engine.Op{arB}}, {Engine: ea[r], Ops: []engine.Op{arA}}}
		}
		require.NoError(t, engine.LaunchGroup(works), "rank %d", r)
	}
	wantA, wantB := sums(1, n, count), sums(2, n, count)
	_, sent := randInt32s(1, 1, count)
	for r, d := range devs {
		require.NoError(t, d.Synchronize(streams[r]), "rank %d", r)
		require.NoError(t, ea[r].AsyncError())
		require.NoError(t, eb[r].AsyncError())
		assert.Equal(t, wantA, read(t, d, outA[r], 4*count), "rank %d all-reduce on A", r)
		assert.Equal(t, wantB, read(t, d, outB[r], 4*count), "rank %d all-reduce on B", r)
	}
	assert.Equal(t, sent, read(t, devs[0], got[0], 4*count), "rank 0's receive")
}

// TestViaHostSeveralStreams: one launch on two streams waits for the work
// enqueued before it on the second, and work enqueued later there waits
// for the launch (it reads the all-reduce's result).
func TestViaHostSeveralStreams(t *testing.T) {
	const n, count = 3, 1001
	devs, streams, fakes := fakeGPUs(t, n)
	es := viaHostComm(t, devs, 1)
	poison := bytes.Repeat([]byte{0xA5}, 4*count)
	second, opens, copies, recvs := make([]gccl.Stream, n), make([]func(), n), make([]uintptr, n), make([]uintptr, n)
	for r, d := range devs {
		s2, err := d.NewStream()
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.DestroyStream(s2) })
		second[r] = s2
		opens[r] = enginetest.Gate(t, fakes[r], d, s2)
		_, in := randInt32s(3, r, count)
		out, got := devBuf(t, d, poison), devBuf(t, d, poison)
		recvs[r] = got
		ops := []engine.Op{
			{Kind: algo.AllReduce, Send: devBuf(t, d, in), Recv: out, Count: count, Type: gccl.Int32, Op: gccl.Sum, Stream: streams[r]},
			{Kind: algo.P2PSend, Send: devBuf(t, d, in), Count: count, Type: gccl.Int32, Peer: (r + 1) % n, Stream: s2},
			{Kind: algo.P2PRecv, Recv: got, Count: count, Type: gccl.Int32, Peer: (r + n - 1) % n, Stream: streams[r]},
		}
		require.NoError(t, engine.LaunchGroup([]engine.Work{{Engine: es[r], Ops: ops}}), "rank %d", r)
		// Later work on the other stream: a copy of the all-reduce's result.
		copies[r] = devBuf(t, d, poison)
		require.NoError(t, d.Do(func() error { return fakes[r].MemcpyDtoDAsync(copies[r], out, 4*count, cuda.Stream(s2)) }))
	}
	time.Sleep(50 * time.Millisecond)
	for r, d := range devs {
		done, err := d.Query(streams[r])
		require.NoError(t, err)
		assert.False(t, done, "rank %d's launch ran before its other stream's earlier work", r)
	}
	time.Sleep(50 * time.Millisecond)
	opens[0]()
	time.Sleep(50 * time.Millisecond)
	done, err := devs[0].Query(second[0])
	require.NoError(t, err)
	assert.False(t, done, "rank 0's other stream ran past the launch, which waits for ranks 1 and 2")
	for _, open := range opens[1:] {
		open()
	}
	want := sums(3, n, count)
	for r, d := range devs { // the other streams first: they wait for the launch
		require.NoError(t, d.Synchronize(second[r]), "rank %d", r)
		assert.Equal(t, want, read(t, d, copies[r], 4*count), "rank %d: the copy on the other stream", r)
	}
	for r, d := range devs {
		require.NoError(t, d.Synchronize(streams[r]), "rank %d", r)
		require.NoError(t, es[r].AsyncError())
		_, sent := randInt32s(3, (r+n-1)%n, count)
		assert.Equal(t, sent, read(t, d, recvs[r], 4*count), "rank %d's receive", r)
	}
}

func read(t *testing.T, d *device.CUDADevice, p uintptr, n int) []byte {
	b := make([]byte, n)
	require.NoError(t, d.CopyOut(b, p))
	return b
}
