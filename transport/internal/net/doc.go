// Package net is gccl's TCP transport, used between ranks on different hosts
// (and on one host when shared memory is disabled): the sockets behind the
// "net" row of package transport's table, internal to transport/.
//
// A Listener is opened per rank and communicator on the interface that
// GCCL_SOCKET_IFNAME (or NCCL_SOCKET_IFNAME) allows. A connection for one
// direction, one peer and one channel is a set of TCP sockets, each dialled by
// the sending rank. Every socket starts with a challenge-response: the
// listener sends a fresh nonce, the dialer a fixed-size hello (communicator
// id, rank, channel, socket index, its own nonce) with an HMAC-SHA256 proof
// of the unique ID's secret over both nonces and the hello, and the listener
// acknowledges with its own proof; the secret never crosses the wire, a
// replayed hello fails (new nonce), and either side refuses a peer that
// cannot prove the secret. The listener runs internal/accept's loop: it
// rides out fd exhaustion and runs at most 256 handshakes at once, each
// within 10 s.
//
// Data travels as frames: a 64-byte header (magic, payload length, sequence
// number, CRC32C of the payload, flags, on a message's first frame the
// message's length and descriptor, CRC32C of the header) and the payload. A
// message is cut into chunks (one frame, possibly empty, when it is
// empty); chunk k goes to socket k mod n, so big messages are spread over
// all sockets and written in parallel. A failure record (a frame with the
// fail flag, the error's code and message) ends a stream whose sender
// failed; a receiver that refuses a message writes one back on the first
// socket, which the sender reads (the only bytes that travel back). On the receiving side
// one goroutine per socket reads frames ahead into pooled buffers, checks
// sequence, length and checksums, and queues them; Recv takes them in
// sequence order and hands each payload to consume without another copy.
// A corrupted frame is never delivered: a bad header or a truncated frame is
// gccl.ErrRemote, a payload checksum mismatch gccl.ErrSystem, and a socket
// the peer closed gccl.ErrRemote. Receive deadlines leave the stream usable;
// a send interrupted by its deadline breaks the connection, since a frame may
// be half written.
package net
