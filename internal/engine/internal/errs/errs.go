package errs

import (
	"context"

	"github.com/gccl/gccl"
)

// Ctx turns an ended context into ErrTimeout (deadline) or ErrRemote
// (cancelled by Abort); doing says what was waited for.
func Ctx(ctx context.Context, doing string) error {
	if ctx.Err() == context.DeadlineExceeded {
		return Expired(doing)
	}
	return gccl.Errorf(gccl.RemoteError, "comm", "%s: communicator aborted", doing)
}

// Expired is the ErrTimeout of a wait whose deadline passed.
func Expired(doing string) error {
	return gccl.Errorf(gccl.TimeoutError, "timeout", "%s: deadline expired; raise GCCL_TIMEOUT or Config.Timeout if the peers are slow", doing)
}

// First returns the first non-nil error.
func First(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// WrapPeer names the peer in a transport error, keeping its code.
func WrapPeer(err error, peer int, doing string) error {
	if err == nil {
		return nil
	}
	return gccl.Errorf(gccl.Code(err), "peer", "%s rank %d: %w", doing, peer, err)
}
