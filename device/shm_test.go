package device

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegionMapsTheSameBytes(t *testing.T) {
	for _, memfd := range []bool{true, false} {
		t.Run(fmt.Sprintf("memfd=%v", memfd), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, uint64(len(t.Name()))))
			n := 3*4096 + rng.IntN(4096)
			p, err := allocShared(n, memfd)
			require.NoError(t, err)
			off := 1 + rng.IntN(n-2)
			r, ok := HostRegionOf(p + uintptr(off))
			require.True(t, ok)
			assert.Equal(t, p, r.Base)
			assert.Equal(t, off, r.Offset)
			assert.Equal(t, 4*4096, r.Size)
			if memfd && memfdSyscall != 0 {
				assert.True(t, strings.HasPrefix(r.Name, "/proc/"), r.Name)
			} else {
				assert.True(t, strings.HasPrefix(r.Name, "/dev/shm/gccl-"), r.Name)
			}

			q, unmap, err := MapHostRegion(r.Name, r.Size)
			require.NoError(t, err)
			require.NotEqual(t, p, q, "a second mapping has its own address")
			mine, theirs := HostBytes(p, n), HostBytes(q, n)
			copy(mine, randBytes(rng, n))
			require.True(t, bytes.Equal(mine, theirs))
			copy(theirs, randBytes(rng, n))
			require.True(t, bytes.Equal(mine, theirs))
			require.NoError(t, unmap())
			require.NoError(t, unmap(), "unmap twice is fine")

			require.NoError(t, freeShared(p))
			_, ok = HostRegionOf(p + uintptr(off))
			assert.False(t, ok)
			_, _, err = MapHostRegion(r.Name, r.Size)
			require.ErrorIs(t, err, gccl.ErrSystem, "the region is gone after Free")
		})
	}
}

func TestMapHostRegionBadArguments(t *testing.T) {
	_, _, err := MapHostRegion("/etc/passwd", 4096)
	requireArg(t, err, gccl.ErrInvalidArgument, "name")
	_, _, err = MapHostRegion("/dev/shm/gccl-does-not-exist", 4096)
	requireArg(t, err, gccl.ErrSystem, "name")

	p, err := allocShared(100, true)
	require.NoError(t, err)
	defer freeShared(p)
	r, _ := HostRegionOf(p)
	_, _, err = MapHostRegion(r.Name, 0)
	requireArg(t, err, gccl.ErrInvalidArgument, "size")
	_, _, err = MapHostRegion(r.Name, r.Size+1)
	requireArg(t, err, gccl.ErrInvalidArgument, "size")
}

func TestManyAllocationsAreTrackedApart(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	ptrs := make([]uintptr, 40)
	sizes := make([]int, len(ptrs))
	for i := range ptrs {
		sizes[i] = 1 + rng.IntN(20000)
		p, err := allocShared(sizes[i], i%2 == 0)
		require.NoError(t, err)
		ptrs[i] = p
	}
	for _, i := range rng.Perm(len(ptrs)) {
		off := rng.IntN(sizes[i])
		r, ok := HostRegionOf(ptrs[i] + uintptr(off))
		require.True(t, ok)
		require.Equal(t, ptrs[i], r.Base)
		require.Equal(t, off, r.Offset)
	}
	for _, i := range rng.Perm(len(ptrs)) {
		require.NoError(t, freeShared(ptrs[i]))
	}
}

// TestPeerProcessMapsRegion runs this test binary again as a peer process
// that maps the region, checks what this process wrote and answers.
func TestPeerProcessMapsRegion(t *testing.T) {
	if os.Getenv("GCCL_TEST_PEER_REGION") != "" {
		t.Skip("this is the peer process")
	}
	for _, memfd := range []bool{true, false} {
		rng := rand.New(rand.NewPCG(5, 6))
		n := 10000
		p, err := allocShared(n, memfd)
		require.NoError(t, err)
		data := HostBytes(p, n)
		copy(data, randBytes(rng, n))
		r, _ := HostRegionOf(p)

		cmd := exec.Command(os.Args[0], "-test.run=^TestPeerHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("GCCL_TEST_PEER_REGION=%s:%d:%d", r.Name, r.Size, n))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "peer: %s", out)
		require.Contains(t, string(out), "PASS")
		for i := range n {
			require.Equal(t, ^byte(i*7), data[i], "byte %d not written by the peer (memfd=%v)", i, memfd)
		}
		require.NoError(t, freeShared(p))
	}
}

// TestPeerHelper is the peer side of TestPeerProcessMapsRegion: it checks
// that the region holds a byte pattern equal to its checksum and overwrites
// it with ^(i*7).
func TestPeerHelper(t *testing.T) {
	spec := os.Getenv("GCCL_TEST_PEER_REGION")
	if spec == "" {
		t.Skip("run by TestPeerProcessMapsRegion")
	}
	parts := strings.Split(spec, ":")
	require.Len(t, parts, 3)
	size, _ := strconv.Atoi(parts[1])
	n, _ := strconv.Atoi(parts[2])
	q, unmap, err := MapHostRegion(parts[0], size)
	require.NoError(t, err)
	defer unmap()
	rng := rand.New(rand.NewPCG(5, 6))
	require.True(t, bytes.Equal(randBytes(rng, n), HostBytes(q, n)), "peer sees different bytes")
	b := HostBytes(q, n)
	for i := range b {
		b[i] = ^byte(i * 7)
	}
}
