// Package net is the engine of the socket network provider
// (transport/network/socket): gccl's TCP connections, internal to
// transport/.
//
// A Listener is opened per rank and communicator on an interface that
// GCCL_SOCKET_IFNAME (or NCCL_SOCKET_IFNAME) allows. A connection for one
// direction, one peer and one channel is a set of TCP sockets, each dialled
// by the sending rank (Dialer). Every socket starts with a
// challenge-response: the listener sends a fresh nonce, the dialer a
// fixed-size hello (communicator id, rank, channel, socket index and count,
// its own nonce) with an HMAC-SHA256 proof of the unique ID's secret over
// both nonces and the hello, and the listener acknowledges with its own
// proof; the secret never crosses the wire, a replayed hello fails (new
// nonce), and either side refuses a peer that cannot prove the secret. The
// listener runs internal/accept's loop: it rides out fd exhaustion and runs
// at most 256 handshakes at once, each within 10 s; authenticated sockets
// are parked by (rank, channel) until Accept claims them (as many as the
// dialer announced) or Reject closes them.
//
// Socket 0 of a connection is the control socket, the others are data
// sockets. SendComm and RecvComm implement network.SendComm and RecvComm:
// each transfer is announced by a frame on the control socket (its tag and
// length); one of up to MaxInline bytes follows there inline, written by
// Isend itself with a non-blocking writev (what the socket does not take
// goes to a writer goroutine), while a longer one is cut into pieces, piece
// k on data socket k mod n, which helper goroutines (Options.Threads, data
// socket k belonging to helper k mod Threads) write, and on the receiving
// side read straight into the posted receive. The receiving side's control
// socket is read by whoever gets there first: a goroutine woken when it is
// readable, or the Test or Wait of a posted receive, which reads what has
// arrived itself without blocking, up to the end of its own frame (the
// frames after it stay the reader goroutine's, read while the caller
// consumes this one); Wait polls so (a send's Wait polls its state) for the
// host's spin time (internal/futex.SpinTime: GCCL_HOST_SPIN, none under
// auto where the host's ranks are more than half its CPUs) before it
// sleeps, yielding its P between polls (a goroutine the caller just
// readied, such as the host backend's sender, waits there), so a waiting
// rank takes a small transfer with no goroutine hand-off. PollOnly
// (network.Poller) raises the control socket's SO_RCVLOWAT for a caller
// that only Tests (the GPU proxy): a frame then wakes neither the reader
// goroutine nor the thread in Go's network poller; the end of the stream
// and a reset still do. A Wait that spins on a receive raises the mark
// too (one setsockopt) and leaves it raised when its transfer is done, so
// that back-to-back spinning Waits cost their senders no wake-up and
// themselves no system call; the mark is lowered to 1 only when a
// goroutine is about to block on the socket's frames: a receive's Wait
// that sleeps (its spin time over, or none, or a transfer in pieces, whose
// Wait also wants the next transfers' frames read ahead, so that the
// helpers start on their pieces). The invariant (lowMark): while the
// mark is raised, no goroutine blocks waiting for the control socket's
// frames; one that is about to lowers the mark first, and a spinner
// raises it only while no one sleeps so, both under the mark's mutex.
// Lowering it makes the kernel signal the socket readable at once if a
// frame came while it was raised (tcp_set_rcvlowat), so the reader
// goroutine reads it and wakes the sleeper. While the mark is raised and
// nobody waits, frames for posted receives stay in the socket for the
// next Test or Wait, rather than being read ahead by the reader
// goroutine. PollOnly keeps the mark raised for good: its caller never
// blocks. A transfer cut into pieces is neither read nor polled so: its
// Wait sleeps at once.
// Frames carry a 48-byte header
// (magic, flags, per-socket sequence number, payload length and CRC32C, the
// transfer's length, tag and piece size, a failure's code, the header's
// CRC32C). The header's CRC32C is always there; the payload's only with
// Options.Checksum (GCCL_SOCKET_CHECKSUM), flagged in the header (flagCRC),
// so that a receiver verifies exactly what its sender checksummed; a
// receiver with Options.Checksum refuses payloads without one
// (gccl.ErrInvalidUsage: the ranks disagree on the setting). Without it a
// payload relies on TCP's own checksum, as in NCCL and MPI: computing
// CRC32C costs both sides several microseconds per 64 KiB on the critical
// path. The receiving side's control reader matches transfers with
// posted receives in order and checks tag and size. A corrupted frame is
// never reported as received: a bad header or a truncated frame is
// gccl.ErrRemote, a payload checksum mismatch gccl.ErrSystem, a socket the
// peer closed gccl.ErrRemote; any of them ends the connection and fails its
// posted requests. A sender that closes cleanly (its control socket ends at
// a frame boundary) is no failure: TCP delivers all it wrote before the
// FIN, so the transfers it announced are still received, pieces included,
// and only receives that no transfer will fill fail (gccl.ErrRemote).
// Likewise a receiver that closes cleanly fails the sender's later Isends,
// not those posted, whose bytes it may have taken whole before it closed.
// Close says bye first (a flagBye frame: a sender's after its last
// control frame, where no frame is left to the control writer; a
// receiver's on the back channel, unless a failure record went), so that
// the peer's requests that can no longer complete fail with
// network.ErrPeerClosed, a gccl.ErrRemote: an orderly end, which a caller
// may take as the end of an idle connection. Abort (network.Aborter) says
// no bye, as a killed process does not: the peer's requests then fail
// with gccl.ErrRemote alone. A receiver's Fail writes a failure record back on the
// control socket (the only bytes that travel back), which the sender's
// Isends and Refusal report.
//
// Helpers run on Options.CPUs where given (the CPUs near the rank's GPU
// or NIC): each locks its OS thread and narrows its mask (topo.Pin) for
// its lifetime. The control reader and writer stay unplaced: they carry
// small transfers, where a locked goroutine's wake-up would cost a thread
// hand-off.
//
// Each connection owns InFlight requests and reuses them (NCCL's request
// array), so a transfer allocates nothing; a request is spent once Test or
// Wait reported it done.
package net
