package device

import (
	"errors"
	"fmt"
	"sync"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/env"
)

// Kind is the kind of a device.
type Kind int

// The device kinds.
const (
	Auto Kind = iota // CUDA when usable, else Host
	Host             // host memory and host streams
	CUDA             // a GPU through the CUDA driver
)

func (k Kind) String() string {
	switch k {
	case Auto:
		return "auto"
	case Host:
		return "host"
	case CUDA:
		return "cuda"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Device is a GPU or the host: memory, copies and streams.
type Device interface {
	Kind() Kind
	Ordinal() int
	// Alloc returns size bytes of device memory. On the host it is shared
	// memory that a peer process on the same node can map.
	Alloc(size int) (uintptr, error)
	// Free releases memory from Alloc.
	Free(p uintptr) error
	// CopyIn copies src to device memory at dst; it is synchronous.
	CopyIn(dst uintptr, src []byte) error
	// CopyOut copies device memory at src to dst; it is synchronous.
	CopyOut(dst []byte, src uintptr) error
	NewStream() (gccl.Stream, error)
	DestroyStream(gccl.Stream) error
	// Synchronize waits, with the configured deadline, until the stream's
	// work is done, and returns its error.
	Synchronize(gccl.Stream) error
	// Query reports without blocking whether the stream's work is done.
	Query(gccl.Stream) (done bool, err error)
}

// Opener opens device number ordinal of one kind.
type Opener func(ordinal int) (Device, error)

// ErrNoDriver is what an Opener's error wraps when the kind of device is
// not present on this machine (no driver, no device). Auto then falls back
// to the host device.
var ErrNoDriver error = &gccl.Error{Code: gccl.SystemError, Arg: "device",
	Msg: "no GPU driver or device on this machine; use the host backend (GCCL_DEVICE=host)"}

var openers = struct {
	sync.RWMutex
	m map[Kind]Opener
}{m: map[Kind]Opener{}}

// RegisterOpener installs the Opener for a kind, replacing any earlier one;
// a nil open removes it. The CUDA backend calls it from an init function.
// Host may be replaced too (tests use that to install fakes); Auto may not.
func RegisterOpener(k Kind, open Opener) error {
	if k != Host && k != CUDA {
		return gccl.Errorf(gccl.InvalidArgument, "kind", "cannot register an opener for %v; use Host or CUDA", k)
	}
	openers.Lock()
	defer openers.Unlock()
	if open == nil {
		delete(openers.m, k)
	} else {
		openers.m[k] = open
	}
	return nil
}

func opener(k Kind) Opener {
	openers.RLock()
	defer openers.RUnlock()
	return openers.m[k]
}

// Open opens device number ordinal of the given kind. See the package
// documentation for how Auto chooses.
func Open(kind Kind, ordinal int) (Device, error) {
	if ordinal < 0 {
		return nil, gccl.Errorf(gccl.InvalidArgument, "ordinal", "device ordinal %d is negative", ordinal)
	}
	switch kind {
	case Host:
		if open := opener(Host); open != nil {
			return open(ordinal)
		}
		return newHost(ordinal, env.Get().Timeout), nil
	case CUDA:
		return openCUDA(ordinal)
	case Auto:
		return openAuto(ordinal)
	}
	return nil, gccl.Errorf(gccl.InvalidArgument, "kind", "unknown device kind %v; use Auto, Host or CUDA", kind)
}

func openCUDA(ordinal int) (Device, error) {
	open := opener(CUDA)
	if open == nil {
		return nil, gccl.Errorf(gccl.SystemError, "device",
			"this program has no CUDA support built in (%w)", ErrNoDriver)
	}
	return open(ordinal)
}

func openAuto(ordinal int) (Device, error) {
	switch env.Get().Device {
	case "host":
		return Open(Host, ordinal)
	case "cuda":
		return openCUDA(ordinal)
	}
	if opener(CUDA) == nil {
		return Open(Host, ordinal)
	}
	d, err := openCUDA(ordinal)
	if errors.Is(err, ErrNoDriver) {
		return Open(Host, ordinal)
	}
	return d, err
}

// Memset sets n bytes of device memory at p to b. It uses the device's own
// Memset when it has one, else copies in a filled buffer.
func Memset(d Device, p uintptr, b byte, n int) error {
	if d == nil {
		return gccl.Errorf(gccl.InvalidArgument, "device", "nil device")
	}
	if ms, ok := d.(interface {
		Memset(p uintptr, b byte, n int) error
	}); ok {
		return ms.Memset(p, b, n)
	}
	if n < 0 {
		return gccl.Errorf(gccl.InvalidArgument, "n", "negative byte count %d", n)
	}
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = b
	}
	return d.CopyIn(p, buf)
}
