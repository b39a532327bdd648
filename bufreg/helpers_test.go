package bufreg

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/env"
	"github.com/stretchr/testify/require"
)

// testComm is a communicator as registration sees it.
type testComm struct {
	dev         device.Device
	rank, count int
}

func (c *testComm) Device() device.Device { return c.dev }
func (c *testComm) Rank() int             { return c.rank }
func (c *testComm) Count() int            { return c.count }

func hostComm(t *testing.T) *testComm {
	d, err := device.NewHost(0, time.Second)
	require.NoError(t, err)
	return &testComm{dev: d, count: 1}
}

// spyDriver wraps the fake to shape granularities and attributes and to
// record the VMM calls bufreg makes.
type spyDriver struct {
	*cudafake.Fake
	rec, min  int  // granularities reported (0: the fake's)
	fabric    bool // report fabric handle support
	refuseFab bool // refuse cuMemCreate with the fabric handle type
	mu        sync.Mutex
	creates   []cuda.HandleType
	reserves  [][2]int // size, align
	access    []cuda.Device
}

func (s *spyDriver) MemGetAllocationGranularity(dev cuda.Device, h cuda.HandleType, recommended bool) (int, error) {
	switch {
	case recommended && s.rec > 0:
		return s.rec, nil
	case !recommended && s.min > 0:
		return s.min, nil
	}
	return s.Fake.MemGetAllocationGranularity(dev, h, recommended)
}

func (s *spyDriver) DeviceAttribute(a cuda.DeviceAttr, dev cuda.Device) (int, error) {
	if a == attrHandleTypeFabricSup && s.fabric {
		return 1, nil
	}
	return s.Fake.DeviceAttribute(a, dev)
}

func (s *spyDriver) MemCreate(size int, dev cuda.Device, h cuda.HandleType) (cuda.MemHandle, error) {
	s.mu.Lock()
	s.creates = append(s.creates, h)
	s.mu.Unlock()
	if h&handleFabric != 0 && s.refuseFab {
		return 0, cuda.NewError("cuMemCreate", cuda.ErrorNotSupported, "(spy)")
	}
	return s.Fake.MemCreate(size, dev, h)
}

func (s *spyDriver) MemAddressReserve(size, align int) (uintptr, error) {
	s.mu.Lock()
	s.reserves = append(s.reserves, [2]int{size, align})
	s.mu.Unlock()
	return s.Fake.MemAddressReserve(size, align)
}

func (s *spyDriver) MemSetAccess(p uintptr, size int, dev cuda.Device, a cuda.Access) error {
	s.mu.Lock()
	s.access = append(s.access, dev)
	s.mu.Unlock()
	return s.Fake.MemSetAccess(p, size, dev, a)
}

// gpuComm opens GPU ordinal of drv as a communicator's device.
func gpuComm(t *testing.T, drv cuda.Driver, ordinal int) *testComm {
	d, err := openGPU(drv, ordinal, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return &testComm{dev: d, count: 1}
}

func fakeComm(t *testing.T) (*testComm, *cudafake.Fake) {
	f := cudafake.New(cudafake.Config{Devices: 2, MemBytes: 256 << 20})
	return gpuComm(t, f, 0), f
}

// requireCode fails unless err is a *gccl.Error with the given code.
func requireCode(t *testing.T, err error, code gccl.Result) {
	t.Helper()
	require.Error(t, err)
	var ge *gccl.Error
	require.True(t, errors.As(err, &ge), "%T is not a *gccl.Error: %v", err, err)
	require.Equal(t, code, ge.Code, "%v", err)
}

// setEnv sets a variable for one test and reloads the settings.
func setEnv(t *testing.T, k, v string) {
	t.Cleanup(func() { env.Reload() }) // runs after Setenv restores k
	t.Setenv(k, v)
	env.Reload()
}

// randBytes returns n random bytes seeded from r.
func randBytes(r *rand.Rand, n int) []byte {
	var seed [32]byte
	for i := range seed {
		seed[i] = byte(r.Uint32())
	}
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(seed).Read(b)
	return b
}

// eventually polls cond until it holds or a deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// openGPU opens GPU ordinal through drv (a cudafake, or the real driver).
func openGPU(drv cuda.Driver, ordinal int, timeout time.Duration) (*device.CUDADevice, error) {
	d, err := devlink.OpenGPU(drv, ordinal, timeout)
	if err != nil {
		return nil, err
	}
	return d.(*device.CUDADevice), nil
}
