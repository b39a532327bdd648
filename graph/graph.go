package graph

import (
	"github.com/gccl/gccl"
	"github.com/gccl/gccl/internal/capture"
	"github.com/gccl/gccl/internal/cuda"
	"github.com/gccl/gccl/internal/env"
)

// RegisterEnabled reports whether buffers used by captured operations are
// registered for the lifetime of their graph (GCCL_GRAPH_REGISTER, or
// NCCL_GRAPH_REGISTER; on unless set to 0).
func RegisterEnabled() bool { return env.Get().GraphRegister }

// Capture describes the capture state of a stream.
//
// Deprecated: internal to gccl (it names cuda types); gccl's engine uses it
// until it moves to package internal/capture (issue #14), then it goes.
type Capture struct {
	Active bool       // work enqueued on the stream now is recorded into Graph
	ID     uint64     // unique per capture sequence (0 when not capturing)
	Graph  cuda.Graph // the graph being built (0 when not capturing)
}

// Info is internal/capture.Info.
//
// Deprecated: internal to gccl; see Capture.
func Info(drv cuda.Driver, s gccl.Stream) (Capture, error) {
	c, err := capture.Info(drv, s)
	return Capture(c), err
}

// Capturing is internal/capture.Capturing.
//
// Deprecated: internal to gccl; see Capture.
func Capturing(drv cuda.Driver, s gccl.Stream) (bool, uint64, error) {
	return capture.Capturing(drv, s)
}

// RetainForGraph is internal/capture.Retain.
//
// Deprecated: internal to gccl; see Capture.
func RetainForGraph(drv cuda.Driver, s gccl.Stream, release func()) (bool, error) {
	return capture.Retain(drv, s, release)
}
