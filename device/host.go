package device

import (
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/hoststream"
	"github.com/gccl/gccl/internal/progress"
)

// hostDevice is the host backend's device: shared host memory and host
// streams. Several host devices (ordinals) may exist in one process.
type hostDevice struct {
	ordinal int
	timeout time.Duration // the deadline of Synchronize and of cross-stream waits
}

func newHost(ordinal int, timeout time.Duration) *hostDevice {
	if timeout <= 0 {
		timeout = hoststream.DefaultTimeout
	}
	return &hostDevice{ordinal: ordinal, timeout: timeout}
}

// NewHost returns host device number ordinal whose waits are bounded by
// timeout (0: GCCL_TIMEOUT's default). Open(Host, ordinal) is the usual way.
func NewHost(ordinal int, timeout time.Duration) (Device, error) {
	if ordinal < 0 {
		return nil, gccl.Errorf(gccl.InvalidArgument, "ordinal", "device ordinal %d is negative", ordinal)
	}
	return newHost(ordinal, timeout), nil
}

func (d *hostDevice) Kind() Kind   { return Host }
func (d *hostDevice) Ordinal() int { return d.ordinal }

// Alloc returns page-aligned shared memory; Alloc(0) returns a valid,
// one-page allocation so that zero-count operations get non-nil buffers.
func (d *hostDevice) Alloc(size int) (uintptr, error) { return allocShared(size, true) }

// Free releases memory from Alloc; Free(0) does nothing.
func (d *hostDevice) Free(p uintptr) error { return freeShared(p) }

func (d *hostDevice) CopyIn(dst uintptr, src []byte) error {
	if err := checkHost("dst", dst, len(src)); err != nil {
		return err
	}
	copy(HostBytes(dst, len(src)), src)
	return nil
}

func (d *hostDevice) CopyOut(dst []byte, src uintptr) error {
	if err := checkHost("src", src, len(dst)); err != nil {
		return err
	}
	copy(dst, HostBytes(src, len(dst)))
	return nil
}

// Memset sets n bytes at p to b.
func (d *hostDevice) Memset(p uintptr, b byte, n int) error {
	if err := checkHost("p", p, n); err != nil {
		return err
	}
	buf := HostBytes(p, n)
	for i := range buf {
		buf[i] = b
	}
	return nil
}

func (d *hostDevice) NewStream() (gccl.Stream, error) {
	return hoststream.Register(hoststream.NewWithTimeout(d.timeout)), nil
}

// DestroyStream forgets the handle and closes the stream; work already
// enqueued still runs.
func (d *hostDevice) DestroyStream(h gccl.Stream) error {
	s, err := hoststream.Unregister(h)
	if err != nil {
		return err
	}
	return s.Close()
}

func (d *hostDevice) Synchronize(h gccl.Stream) error {
	s, err := hoststream.Lookup(d.ordinal, h)
	if err != nil {
		return err
	}
	progress.Begin(true)
	defer progress.End(true)
	return s.SynchronizeWithin(d.timeout)
}

func (d *hostDevice) Query(h gccl.Stream) (bool, error) {
	s, err := hoststream.Lookup(d.ordinal, h)
	if err != nil {
		return false, err
	}
	return s.Query()
}
