package device

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireRange asserts err is CheckRange's InvalidArgument naming arg,
// whose message contains each of words.
func requireRange(t *testing.T, err error, arg string, words ...string) {
	t.Helper()
	requireArg(t, err, gccl.ErrInvalidArgument, arg)
	for _, w := range words {
		assert.Contains(t, err.Error(), w)
	}
}

// TestCheckRangeHost: a range inside one live Alloc passes, up to the
// size asked for; past it, in freed memory, in unmapped memory or running
// from foreign memory into an allocation it is refused, naming the range
// and the allocation; pinned Go memory and empty ranges pass.
func TestCheckRangeHost(t *testing.T) {
	d, err := Open(Host, 0)
	require.NoError(t, err)
	p, err := d.Alloc(4096)
	require.NoError(t, err)
	defer d.Free(p)
	small, err := d.Alloc(100)
	require.NoError(t, err)
	defer d.Free(small)

	require.NoError(t, CheckRange(d, "sendbuff", p, 4096))
	require.NoError(t, CheckRange(d, "sendbuff", p+4000, 96))
	require.NoError(t, CheckRange(d, "sendbuff", 0, 0), "an empty range touches nothing")
	requireRange(t, CheckRange(d, "recvbuff", p, 8192), "recvbuff",
		fmt.Sprintf("recvbuff [%#x,+8192) runs 4096 bytes past its allocation of 4096 bytes at %#x", p, p), "larger allocation")
	requireRange(t, CheckRange(d, "sendbuff", small+96, 8), "sendbuff",
		"runs 4 bytes past its allocation of 100 bytes") // the size asked for counts, not the page
	requireRange(t, CheckRange(d, "sendbuff", 0, 4), "sendbuff", "nil")
	requireRange(t, CheckRange(d, "sendbuff", 0x1000, 4), "sendbuff", "not inside any allocation", "Device.Alloc")
	requireRange(t, CheckRange(d, "sendbuff", ^uintptr(0)-8, 64), "sendbuff", "wraps around")

	gone, err := d.Alloc(8192)
	require.NoError(t, err)
	require.NoError(t, d.Free(gone))
	requireRange(t, CheckRange(d, "recvbuff", gone+64, 16), "recvbuff",
		fmt.Sprintf("lies in an allocation of 8192 bytes at %#x that was freed", gone))

	buf := make([]byte, 256)
	g := uintptr(unsafe.Pointer(&buf[0]))
	require.NoError(t, CheckRange(d, "sendbuff", g, len(buf)), "pinned Go memory is a valid host buffer")
	require.NoError(t, d.CopyIn(g, []byte("ok")))
	requireArg(t, d.CopyIn(0x1000, []byte("x")), gccl.ErrInvalidArgument, "dst")
	requireArg(t, d.CopyIn(gone, []byte("x")), gccl.ErrInvalidArgument, "dst")
}

// TestCheckRangeHostRunsIntoAllocation: a range that starts in mapped
// memory no Alloc made and ends in an allocation is refused.
func TestCheckRangeHostRunsIntoAllocation(t *testing.T) {
	d, err := Open(Host, 0)
	require.NoError(t, err)
	p, err := d.Alloc(4096)
	require.NoError(t, err)
	defer d.Free(p)
	const mapFixedNoReplace = 0x100000
	below, _, errno := syscall.Syscall6(syscall.SYS_MMAP, p-4096, 4096, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|mapFixedNoReplace, ^uintptr(0), 0)
	if errno != 0 || below != p-4096 {
		t.Skipf("the page below the allocation is taken (%v)", errno)
	}
	defer syscall.Syscall(syscall.SYS_MUNMAP, below, 4096, 0)
	require.NoError(t, CheckRange(d, "sendbuff", below, 4096), "foreign mapped memory")
	requireRange(t, CheckRange(d, "sendbuff", below+4000, 200), "sendbuff",
		fmt.Sprintf("starts outside any allocation and runs into the allocation at %#x", p))
}

// TestCheckRangeGPU: on a GPU (the fake driver) the driver's view of the
// allocation decides, cached per allocation: Alloc and bufreg-style cuMem
// memory pass, overruns, never-allocated and freed pointers are refused,
// and a freed allocation is forgotten (Free, devlink.Forget).
func TestCheckRangeGPU(t *testing.T) {
	f := cudafake.New(cudafake.Config{Devices: 2})
	spy := &rangeSpy{Driver: f}
	d, err := openCUDADriver(spy, 0, 0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	p, err := d.Alloc(4096)
	require.NoError(t, err)
	require.NoError(t, CheckRange(d, "sendbuff", p, 4096))
	calls := spy.calls
	require.NoError(t, CheckRange(d, "sendbuff", p+8, 64))
	assert.Equal(t, calls, spy.calls, "a known allocation costs no driver call")
	requireRange(t, CheckRange(d, "recvbuff", p, 8192), "recvbuff",
		fmt.Sprintf("recvbuff [%#x,+8192) runs 4096 bytes past its allocation of 4096 bytes at %#x", p, p))
	requireRange(t, CheckRange(d, "sendbuff", 0xdead0000, 4), "sendbuff", "not inside any allocation of GPU 0", "CUDA_ERROR_NOT_FOUND")

	require.NoError(t, d.Free(p))
	requireRange(t, CheckRange(d, "sendbuff", p, 4), "sendbuff", "not inside any allocation")

	// Memory of another allocator (a cuMemAlloc the device did not make).
	var q uintptr
	require.NoError(t, d.Do(func() (err error) { q, err = f.MemAlloc(1000); return err }))
	require.NoError(t, CheckRange(d, "sendbuff", q, 1000))
	requireRange(t, CheckRange(d, "sendbuff", q, 1001), "sendbuff", "runs 1 bytes past its allocation of 1000 bytes")
	devlink.Forget(d, q)
	require.NoError(t, d.Do(func() error { return f.MemFree(q) }))
	requireRange(t, CheckRange(d, "sendbuff", q, 4), "sendbuff", "not inside any allocation")

	// Memory of GPU 1 on a GPU 0 device.
	_, d1 := openFakeOn(t, f, 1)
	r, err := d1.Alloc(256)
	require.NoError(t, err)
	requireRange(t, CheckRange(d, "recvbuff", r, 16), "recvbuff", "memory of GPU 1", "runs on GPU 0")
	require.NoError(t, CheckRange(d1, "recvbuff", r, 16))
}

// rangeSpy counts cuMemGetAddressRange calls.
type rangeSpy struct {
	cuda.Driver
	calls int
}

func (s *rangeSpy) MemGetAddressRange(p uintptr) (uintptr, int, error) {
	s.calls++
	return s.Driver.MemGetAddressRange(p)
}

func openFakeOn(t *testing.T, f *cudafake.Fake, ordinal int) (*cudafake.Fake, *CUDADevice) {
	d, err := openCUDADriver(f, ordinal, 0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Close()) })
	return f, d
}

// BenchmarkCheckRange: what the engine's check costs per buffer once the
// allocation is known: the host's table lookup, a GPU's cached lookup
// (the fake driver is asked only for the first).
func BenchmarkCheckRange(b *testing.B) {
	host, err := Open(Host, 0)
	require.NoError(b, err)
	hp, err := host.Alloc(1 << 20)
	require.NoError(b, err)
	defer host.Free(hp)
	f := cudafake.New(cudafake.Config{})
	gpu, err := openCUDADriver(f, 0, 0)
	require.NoError(b, err)
	defer gpu.Close()
	gp, err := gpu.Alloc(1 << 20)
	require.NoError(b, err)
	for _, c := range []struct {
		name string
		d    Device
		p    uintptr
	}{{"host", host, hp}, {"gpu-cached", gpu, gp}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := CheckRange(c.d, "sendbuff", c.p+64, 8); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestFreedAddressStaysReserved: Free keeps the released address space
// reserved, so nothing else can be mapped there (a mapping asked for at
// that address without replacing fails) and an operation on the freed
// memory is refused every time, not only while nothing else happens to be
// mapped there.
func TestFreedAddressStaysReserved(t *testing.T) {
	d, err := Open(Host, 0)
	require.NoError(t, err)
	p, err := d.Alloc(3 * 4096)
	require.NoError(t, err)
	require.NoError(t, d.Free(p))
	_, _, errno := syscall.Syscall6(syscall.SYS_MMAP, p+4096, 4096, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|mapFixedNoreplace, ^uintptr(0), 0)
	require.Equal(t, syscall.EEXIST, errno, "the freed range must still be held")
	for range 3 {
		requireRange(t, CheckRange(d, "recvbuff", p+4096, 64), "recvbuff", "that was freed")
		runtime.GC() // the Go runtime maps and unmaps meanwhile
	}
}
