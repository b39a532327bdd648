package comm

import (
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/env"
)

// Config tunes a communicator. The zero value (or a nil *Config) means the
// defaults, taken from the environment where a variable exists.
//
// NCCL's minCTAs, maxCTAs and netName have no field: the GPU kernels' grid
// is bounded for the whole process by GCCL_MAX_NCHANNELS, and TCP sockets
// are gccl's only network transport.
type Config struct {
	Blocking  *bool         // nil = GCCL_COMM_BLOCKING (default true)
	Device    int           // local device ordinal, used when DeviceSet
	DeviceSet bool          // false = device 0
	Backend   device.Kind   // device.Auto: GPU if a driver is present and GCCL_DEVICE != host
	Timeout   time.Duration // every wait's deadline; 0 = GCCL_TIMEOUT (default 5 min)
	Name      string        // shown in logs

	// UseDevice is an open device for this rank to run on (device.Open's
	// result, say, to share one device between communicators or keep its
	// memory past Close); the communicator never closes it, and Device,
	// DeviceSet and Backend are ignored. nil: the communicator opens
	// Backend's device number Device itself and closes it in Close and
	// Abort, which frees the memory and streams that device's Alloc and
	// NewStream made.
	UseDevice device.Device
}

// resolve validates cfg and fills in the defaults.
func resolve(cfg *Config) (Config, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	s := env.Get()
	if c.Blocking == nil {
		b := s.CommBlocking
		c.Blocking = &b
	} else {
		b := *c.Blocking
		c.Blocking = &b
	}
	switch {
	case c.Timeout < 0:
		return c, gccl.Errorf(gccl.InvalidArgument, "config.Timeout", "negative timeout %v; use 0 for the default", c.Timeout)
	case c.Timeout == 0:
		c.Timeout = s.Timeout
	}
	if c.DeviceSet && c.Device < 0 {
		return c, gccl.Errorf(gccl.InvalidArgument, "config.Device", "device ordinal %d is negative", c.Device)
	}
	if !c.DeviceSet {
		c.Device = 0
	}
	if c.Backend != device.Auto && c.Backend != device.Host && c.Backend != device.CUDA {
		return c, gccl.Errorf(gccl.InvalidArgument, "config.Backend", "unknown backend %v; use device.Auto, Host or CUDA", c.Backend)
	}
	return c, nil
}
