// Package net is gccl's TCP transport, used between ranks on different hosts
// (and on one host when shared memory is disabled).
//
// A Listener is opened per rank and communicator on the interface that
// GCCL_SOCKET_IFNAME (or NCCL_SOCKET_IFNAME) allows. A connection for one
// direction, one peer and one channel is a set of TCP sockets, each dialled by
// the sending rank; every socket starts with a fixed-size hello carrying the
// communicator id and the unique ID's secret, and the listener rejects (and
// closes) sockets whose hello does not match.
//
// Data travels as frames: a 24-byte header (magic, payload length, sequence
// number, CRC32C of the payload, CRC32C of the header) and the payload. A
// message is cut into chunks; chunk k goes to socket k mod n, so big messages
// are spread over all sockets and written in parallel. On the receiving side
// one goroutine per socket reads frames ahead into pooled buffers, checks
// sequence, length and checksums, and queues them; Recv takes them in
// sequence order and hands each payload to consume without another copy.
// A corrupted frame is never delivered: a bad header or a truncated frame is
// gccl.ErrRemote, a payload checksum mismatch gccl.ErrSystem, and a socket
// the peer closed gccl.ErrRemote. Receive deadlines leave the stream usable;
// a send interrupted by its deadline breaks the connection, since a frame may
// be half written.
package net
