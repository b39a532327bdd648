package memalloc

import (
	"sync"
	"testing"
	"time"

	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/cuda/cudafake"
	"github.com/gccl/gccl/internal/devlink"
	"github.com/gccl/gccl/internal/leakcheck"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

func hostDev(t *testing.T) device.Device {
	d, err := device.NewHost(0, time.Second)
	require.NoError(t, err)
	return d
}

// spyDriver wraps the fake to shape granularities and attributes and to
// record the VMM calls Alloc makes.
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

// gpuDev opens GPU ordinal of drv (a cudafake).
func gpuDev(t *testing.T, drv cuda.Driver, ordinal int) *device.CUDADevice {
	d, err := devlink.OpenGPU(drv, ordinal, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.(*device.CUDADevice).Close() })
	return d.(*device.CUDADevice)
}
