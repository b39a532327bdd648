package memview

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/clock"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/exchange"
	"github.com/gccl/gccl/cmd/gccl-perf/internal/lib"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/engine/gpu"
	"github.com/gccl/gccl/internal/perf"
	"github.com/gccl/gccl/transport/topo"
)

// PathSource says how gccl ran its latest operation on this rank
// (engine.Engine.LastGPUPath).
type PathSource interface {
	LastGPUPath() string
}

// View computes, on a GPU, the memory-traffic columns of each row: the
// bytes the engine's chosen kernels read and write (gpu.TrafficOf of
// the path the engine took) on the busiest GPU, and rank 0 times a
// device-to-device copy (cuMemcpyDtoDAsync) of the row's size with the
// same events, the yardstick of those bytes.
//
// The copies rotate over as many source and destination pairs as it takes
// for their footprint to be twice the GPU's L2 cache (at most maxPairs):
// copies of one pair back to back would be served partly from the L2 (a
// 16 MiB copy reads and writes 32 MiB, against H100's 50 MB of L2) and
// measure the cache, not the memory system.
type View struct {
	paths    PathSource
	timer    *clock.Timer // rank 0: times the copies; nil elsewhere
	dev      *device.CUDADevice
	drv      cuda.Driver
	gpu      uint64 // which GPU this rank runs on (host and ordinal)
	l2       int64  // the GPU's L2 cache in bytes (rank 0)
	src, dst uintptr
	span     int64 // bytes of src and dst: pairs of the copy's size, back to back
	warmup   int
	iters    int
	batch    int // -batch
}

// maxPairs bounds the copy's rotation (small copies, where the L2 does
// not matter to a latency-bound copy anyway).
const maxPairs = 64

// pairs is how many source and destination pairs of size bytes the copy
// rotates over: their footprint (2·size each) reaches twice the L2.
func pairs(size, l2 int64) int64 {
	if size <= 0 {
		return 1
	}
	return min(max((l2+size-1)/size, 1), maxPairs)
}

// New returns the view of a GPU rank, or nil without one (host backend,
// no path source). The reference copy is timed as the clock set times the
// operations, with at most 2 warm-up batches.
func New(set clock.Settings, paths PathSource, d device.Device, s gccl.Stream, rank int) (*View, error) {
	gpu, ok := d.(*device.CUDADevice)
	if !ok || d.Kind() != device.CUDA || paths == nil {
		return nil, nil
	}
	drv, _ := devlink.Driver(gpu)
	m := &View{paths: paths, dev: gpu, drv: drv, gpu: topo.HostHash() ^ uint64(gpu.Ordinal()), warmup: min(set.Warmup, 2),
		iters: set.Iters, batch: set.Batch}
	if rank == 0 {
		l2, err := drv.DeviceAttribute(cuda.AttrL2CacheSize, cuda.Device(gpu.Ordinal()))
		if err != nil {
			return nil, fmt.Errorf("asking the GPU's L2 cache size: %w", err)
		}
		m.l2 = int64(l2)
		if m.timer, err = clock.NewTimer(gpu, s, set.Timeout); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Close frees the copy buffers and the events; it is safe on nil.
func (m *View) Close() error {
	if m == nil {
		return nil
	}
	return errors.Join(m.free(), m.timer.Close())
}

func (m *View) free() error {
	var errs []error
	for _, p := range []*uintptr{&m.src, &m.dst} {
		if *p != 0 {
			errs = append(errs, m.dev.Free(*p))
			*p = 0
		}
	}
	m.span = 0
	return errors.Join(errs...)
}

// copyTime is the median time of one copy of size bytes (rank 0),
// rotating over pairs(size, l2) buffer pairs.
func (m *View) copyTime(size int64) (time.Duration, error) {
	if size == 0 {
		return 0, nil
	}
	k := pairs(size, m.l2)
	if span := k * size; span > m.span {
		if err := m.free(); err != nil {
			return 0, err
		}
		var err error
		if m.src, err = m.dev.Alloc(int(span)); err == nil {
			m.dst, err = m.dev.Alloc(int(span))
		}
		if err != nil {
			return 0, fmt.Errorf("allocating the %d-byte buffers of the reference copy: %w", span, err)
		}
		m.span = span
	}
	drv, s := m.drv, m.timer.Stream()
	b := clock.BatchFor(m.batch, size)
	var next int64 // the pair of the next copy
	copies := func(n int) func() error {
		return func() error {
			for range n {
				off := uintptr(next * size)
				next = (next + 1) % k
				if err := drv.MemcpyDtoDAsync(m.dst+off, m.src+off, int(size), s); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if _, err := m.timer.Time(copies(m.warmup * b)); err != nil {
		return 0, err
	}
	times := make([]time.Duration, 0, m.iters)
	for range m.iters {
		d, err := m.timer.Time(copies(b))
		if err != nil {
			return 0, err
		}
		times = append(times, d/time.Duration(b))
	}
	return perf.Median(times), nil
}

// opKinds are the engine operations one call of op makes on a rank.
var opKinds = map[perf.Op][]algo.Kind{
	perf.AllReduce: {algo.AllReduce}, perf.AllGather: {algo.AllGather}, perf.ReduceScatter: {algo.ReduceScatter},
	perf.Broadcast: {algo.Broadcast}, perf.Reduce: {algo.Reduce}, perf.SendRecv: {algo.P2PSend, algo.P2PRecv},
}

// traffic is this rank's traffic for c run with path; ok is false where
// the model has no figure (all-to-all, an unknown path).
func traffic(path string, c lib.Call, inPlace bool) (gpu.Traffic, bool) {
	var sum gpu.Traffic
	kinds := opKinds[c.Op]
	for _, k := range kinds {
		tr, ok := gpu.TrafficOf(path, k, c.Count, c.Type, c.NRanks, c.Rank, c.Root, inPlace)
		if !ok {
			return gpu.Traffic{}, false
		}
		sum = sum.Add(tr)
	}
	return sum, len(kinds) > 0
}

// Row agrees with the other ranks on the memory view of c, which gccl ran
// in t: every rank adds its traffic, rank 0 times the copy of size bytes.
// It is nil when a rank has no traffic figure.
func (m *View) Row(x exchange.Exchanger, c lib.Call, size int64, t time.Duration, inPlace bool) (*perf.Memory, error) {
	path := m.paths.LastGPUPath()
	tr, ok := traffic(path, c, inPlace)
	var copyT time.Duration
	var localErr error
	if m.timer != nil {
		copyT, localErr = m.copyTime(size)
	}
	var flags uint64
	if ok {
		flags |= 1
	}
	if localErr != nil {
		flags |= 2
	}
	msg := binary.LittleEndian.AppendUint64(nil, flags)
	for _, v := range []uint64{uint64(tr.Read + tr.Write), m.gpu, uint64(copyT)} {
		msg = binary.LittleEndian.AppendUint64(msg, v)
	}
	all, err := x.Allgather(msg)
	if localErr != nil {
		return nil, fmt.Errorf("timing the reference copy: %w", localErr)
	}
	if err != nil {
		return nil, err
	}
	perGPU, known := map[uint64]int64{}, true
	for r := 0; r+32 <= len(all); r += 32 {
		le := binary.LittleEndian
		f := le.Uint64(all[r:])
		if f&2 != 0 {
			return nil, fmt.Errorf("rank 0 failed to time the reference copy")
		}
		known = known && f&1 != 0
		perGPU[le.Uint64(all[r+16:])] += int64(le.Uint64(all[r+8:]))
		if r == 0 {
			copyT = time.Duration(le.Uint64(all[r+24:]))
		}
	}
	if !known {
		return nil, nil
	}
	mem := &perf.Memory{Time: t, CopyTime: copyT, CopySize: size, Path: path}
	for _, b := range perGPU {
		mem.Bytes = max(mem.Bytes, b)
	}
	return mem, nil
}
