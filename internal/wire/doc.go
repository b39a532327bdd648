// Package wire is the byte format of gccl's bootstrap: the frame that wraps
// every message on a bootstrap socket, the messages themselves, and the
// content of a unique ID.
//
// A frame is a 16-byte header (magic, format version, message type, payload
// length, CRC32C of the payload) followed by the payload. Every length read
// from the wire is bounded before anything is allocated: a frame's payload by
// the limit the reader passes (at most MaxPayload), a list by what is left of
// its payload. A decoder never panics on any input and never reads past its
// buffer; the fuzz tests (FuzzDecode...) check that, and that whatever
// decodes re-encodes to the same bytes.
//
// Decoding errors are *gccl.Error with code RemoteError: the bytes came from
// a peer, and the peer is at fault.
package wire
