// Package enginetest helps test code built on the engine without MPI or the
// socket bootstrap: an in-process Bootstrap over channels, so that
// goroutines can play the ranks of a communicator; and Gate, which holds a
// fake GPU's streams so that work stays in flight until a test opens it.
package enginetest
