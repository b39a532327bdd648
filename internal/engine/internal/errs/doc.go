// Package errs holds the error helpers that the engine's core and its
// backends share, so that every wait in the engine ends with the same
// typed errors: a deadline is gccl.ErrTimeout, Abort is gccl.ErrRemote.
// It is the one copy of them in the engine.
package errs
