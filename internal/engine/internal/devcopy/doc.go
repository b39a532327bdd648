// Package devcopy is the stream-ordered device-to-device copy of the
// engine's GPU backends (package gpu and gpunet), for what needs no
// kernel: a one-rank communicator's collective, a Send to this rank's own
// Recv. A copy that would move nothing (no bytes, or in place) is skipped
// without a call to the driver.
package devcopy
