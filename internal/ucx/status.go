package ucx

import (
	"errors"
	"fmt"

	"github.com/gccl/gccl"
)

// Status is a ucs_status_t.
type Status int

// The statuses gccl looks at (ucs/type/status.h).
const (
	OK                Status = 0
	InProgress        Status = 1
	ErrNoResource     Status = -2
	ErrInvalidParam   Status = -5
	ErrMsgTruncated   Status = -9
	ErrBusy           Status = -15
	ErrCanceled       Status = -16
	errLinkFirst      Status = -40 // UCS_ERR_FIRST_LINK_FAILURE
	errEndpointLast   Status = -89 // UCS_ERR_LAST_ENDPOINT_FAILURE
	errUnreachable    Status = -6
	errNotConnected   Status = -24 // the peer closed its end (its worker went)
	errConnectionRset Status = -25
	errNotLoaded      Status = -120 // the shim's own: no library
)

// Error is the status's text, as ucs_status_string gives it.
func (s Status) Error() string { return fmt.Sprintf("%s (ucs_status_t %d)", cStatusString(s), int(s)) }

// PeerFailure reports whether s says the peer or the path to it failed
// (unreachable, not connected any more, connection reset, link and
// endpoint failures, timeouts).
func (s Status) PeerFailure() bool {
	return s == errUnreachable || s == errNotConnected || s == errConnectionRset ||
		(s <= errLinkFirst && s >= errEndpointLast)
}

// ErrNoLibrary is the cause of Load's error when libucp.so.0 cannot be used.
var ErrNoLibrary = errors.New("libucp.so.0 not found")

// check turns a status of call into a gccl error: peer failures are
// RemoteError, truncation InvalidUsage, anything else SystemError.
func check(call string, s Status) error {
	switch {
	case s == OK || s == InProgress:
		return nil
	case s.PeerFailure():
		return gccl.Errorf(gccl.RemoteError, call, "the peer failed or is unreachable: %w", s)
	case s == ErrMsgTruncated:
		return gccl.Errorf(gccl.InvalidUsage, call, "the message is larger than the receive buffer: %w", s)
	default:
		return gccl.Errorf(gccl.SystemError, call, "%w", s)
	}
}
