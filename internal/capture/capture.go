// Package capture tells whether a stream is being captured into a CUDA
// graph (cuStreamGetCaptureInfo) and ties a resource's release to the
// lifetime of the graph being captured (a CUDA user object). The GPU
// backend uses it; package graph documents the behaviour users see.
package capture

import (
	"errors"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/cuda"
)

// ErrInvalidated is the cause (errors.Is) of Info's gccl.ErrInvalidUsage
// for a stream whose capture was invalidated.
var ErrInvalidated = errors.New("the capture was invalidated")

// Invalidated reports whether err says that the stream's capture was
// invalidated (an unsupported call while capturing, by the application):
// Info's error, or a driver call's CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.
// Nothing enqueued into such a capture will ever run (EndCapture discards
// it, and the resources tied to its graph with Retain are released), so
// a launch that failed so changed nothing the ranks share: the backends
// report the error without failing the communicator.
func Invalidated(err error) bool {
	return errors.Is(err, ErrInvalidated) || cuda.ResultOf(err) == cuda.ErrorStreamCaptureInvalidated
}

// Capture describes the capture state of a stream.
type Capture struct {
	Active bool       // work enqueued on the stream now is recorded into Graph
	ID     uint64     // unique per capture sequence (0 when not capturing)
	Graph  cuda.Graph // the graph being built (0 when not capturing)
}

// Info returns s's capture state through cuStreamGetCaptureInfo. A capture
// that was invalidated (by an unsupported call during capture) is
// gccl.ErrInvalidUsage: the application must end it and capture again.
func Info(drv cuda.Driver, s gccl.Stream) (Capture, error) {
	if drv == nil {
		return Capture{}, gccl.Errorf(gccl.InvalidArgument, "drv", "nil CUDA driver")
	}
	info, err := drv.StreamGetCaptureInfo(cuda.Stream(s))
	if err != nil {
		return Capture{}, err
	}
	switch info.Status {
	case cuda.CaptureNone:
		return Capture{}, nil
	case cuda.CaptureActive:
		return Capture{Active: true, ID: info.ID, Graph: info.Graph}, nil
	case cuda.CaptureInvalidated:
		return Capture{}, gccl.Errorf(gccl.InvalidUsage, "stream",
			"%w on stream %#x; end it (cuStreamEndCapture) and capture again", ErrInvalidated, uintptr(s))
	}
	return Capture{}, gccl.Errorf(gccl.InternalError, "stream", "unknown capture status %d", info.Status)
}

// Capturing reports whether s is being captured into a graph, and the
// capture's unique ID.
func Capturing(drv cuda.Driver, s gccl.Stream) (bool, uint64, error) {
	c, err := Info(drv, s)
	return c.Active, c.ID, err
}

// Retain ties release to the lifetime of the graph that s is
// being captured into: a CUDA user object whose destructor calls release
// is moved into the graph (cuUserObjectCreate +
// cuGraphRetainUserObject), so release runs once the graph and every
// executable graph instantiated from it are destroyed. release runs on a
// new goroutine, never on the driver's thread, so it may call the driver.
//
// It returns false, and does not call release, when s is not capturing.
// On error release is not called either: the caller still owns the
// resource.
func Retain(drv cuda.Driver, s gccl.Stream, release func()) (bool, error) {
	if release == nil {
		return false, gccl.Errorf(gccl.InvalidArgument, "release", "nil release function")
	}
	c, err := Info(drv, s)
	if err != nil || !c.Active {
		return false, err
	}
	if err := cuda.RetainByGraph(drv, c.Graph, func() { go release() }); err != nil {
		return false, err
	}
	return true, nil
}
