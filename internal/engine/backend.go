package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/gccl/gccl/device"
)

// Backend runs launched operations: the host backend enqueues a task on a
// host stream that moves data over the transports, the GPU backend
// launches kernels on the CUstream, the GPU-via-host backend copies
// through pinned host memory and runs the host backend's plans. The core
// hands it one Launch at a time; a backend never reaches back into the
// Engine.
type Backend interface {
	// Submit takes l and must not block on its operations. On nil the
	// backend owns l: it waits for l's turn (WaitTurn), runs or enqueues
	// its ops, joining its streams (Launch.More), and ends it with Done
	// exactly once, from any goroutine.
	// On an error the backend did not take l (it must not call Done): the
	// core gives the turn back and returns the error to the caller.
	Submit(l *Launch) error
	// Close frees the backend's resources once the core has waited for
	// (Close) or cancelled (Abort, abort true) what was launched. Safe twice.
	Close(abort bool) error
}

// Setup is what the core gives a backend's constructor: the communicator
// and the engine's bounds.
type Setup struct {
	Rank, NRanks int
	Boot         Bootstrap
	Device       device.Device
	Timeout      time.Duration // every wait, already defaulted
	Log          *slog.Logger  // never nil
}

// NewBackend makes an engine's backend. New calls it once, on every rank
// (it may exchange over Boot), with ctx bounded by the engine's timeout.
type NewBackend func(ctx context.Context, s Setup) (Backend, error)

// Joiner is a Backend whose launches of several engines in one group it
// submits together (the host backend: launches that share a stream become
// one task, so that two communicators' operations never wait for each
// other in a stream's order). Other backends' launches are submitted one
// by one, in the engines' ID order (LaunchGroup).
type Joiner interface {
	Backend
	// Joins reports whether b's launches can be joined with this
	// backend's (b is another engine's backend of the same group).
	Joins(b Backend) bool
	// Join groups launches of backends that Joins accepts into batches,
	// checking everything it can before anything is submitted; it submits
	// nothing. The core gives each batch's launches their turns, then
	// calls Submit, which takes them all or none (as Backend.Submit).
	Join(ls []*Launch) ([]Batch, error)
}

// Batch is launches that a Joiner submits together.
type Batch struct {
	Launches []*Launch
	Submit   func() error
}

// Meeter is a Backend whose Submit may wait for its peers' Submit of the
// same operation (the GPU backend agrees on graph registrations over the
// bootstrap while a stream is being captured). Peers in this process may
// be engines of the same group, so the core then submits the group's
// launches concurrently.
type Meeter interface {
	Meets(l *Launch) bool
}

// Quiescer is a Backend with work of its own between ranks that goes on
// after the launches ended (the GPU-across-hosts backend's network
// proxy). Finalize, which is collective, calls Quiesce once the engine
// drained and before the ranks' closing barrier: the backend finishes
// what it owes its peers (the slots its kernels posted) and stops
// watching its connections, so that past the barrier, where every rank
// quiesced, any rank may close them, in any order, and no peer reports
// it. It must not wait for a peer's Quiesce. After it only Close follows.
type Quiescer interface {
	Quiesce(ctx context.Context) error
}

// Reporter is a Backend that reports on its work (the GPU backend): how
// it ran operations, which the core's Stats and LastGPUPath ask, and
// failures that its work reports in memory after the launch ended (the
// GPU kernels' status word), which the core's AsyncError asks for and
// records.
type Reporter interface {
	Stats() Stats
	LastPath() string
	Status() error
}

// Stats are counters of a GPU engine's data path since it was made.
type Stats struct {
	// StagedBytes is how many bytes of user data this rank copied into or
	// out of its communication buffers (copy engines or kernels) to run
	// collectives on unregistered buffers.
	StagedBytes uint64
	// ZeroCopyOps is how many collectives ran directly on registered
	// buffers, peers loading and storing them, with no copy through the
	// communication buffers.
	ZeroCopyOps uint64
}

// Stats returns the data-path counters. They count what the GPU backend
// enqueued; other backends report zeros.
func (e *Engine) Stats() Stats {
	if r := e.reporter; r != nil {
		return r.Stats()
	}
	return Stats{}
}

// LastGPUPath is how the GPU backend ran the latest operation enqueued on
// this engine: the kernel family (a kernel name of package kernels, such
// as kernels.AllReducePipelined), or "copy" or "none" (package gpu's
// PathCopy, PathNone); "" before the first one and on other backends.
// Package gpu's Traffic turns it into bytes.
func (e *Engine) LastGPUPath() string {
	if r := e.reporter; r != nil {
		return r.LastPath()
	}
	return ""
}
