// Package ucx is the ucx network provider (network.Provider) over UCX's
// UCP API (package internal/ucx): InfiniBand RC/DC/UD, RoCE and TCP,
// with shared memory for peers on the same host, and GPUDirect RDMA where
// UCX was built with CUDA.
//
// Devices are the network devices UCX's transports reach (UCX_TLS and
// UCX_NET_DEVICES apply): verbs devices first ("mlx5_0:1", Transport
// "rc_mlx5,dc_mlx5,ud_mlx5"), then TCP interfaces by link speed, loopback
// last; Speed and PCIPath come from sysfs, Memory has MemCUDA only when
// UCX's context reports CUDA memory support. GCCL_IB_DISABLE=1
// (NCCL_IB_DISABLE) leaves the verbs devices out, and a device's context
// is created with UCX_NET_DEVICES naming that device only, so UCX never
// opens InfiniBand or RoCE then (checked when the context is made).
//
// Addressing: a UCP worker address is often larger than a handle may be
// (network.MaxHandleSize, 128 bytes; 79 bytes for TCP alone on a machine
// with two interfaces, over 200 with shared memory), so the handle carries
// a TCP address instead, as NCCL's UCX plugin does: the listener's side
// socket, on the interface GCCL_SOCKET_IFNAME chooses. Connect dials it
// and proves the communicator's id and secret (internal/auth's
// challenge-response; the secret never crosses the wire). Only then does
// the listener create the connection's worker and send its address, with
// its own proof over it, so nothing of an unauthenticated peer reaches UCX.
// Connect then flushes its endpoint, which returns only once the
// receiver's wire-up reply has arrived (the contexts ask UCX to wire every
// endpoint up when it is created, UCX_RESOLVE_REMOTE_EP_ID=y, instead of
// at the first rendezvous send), and tells the receiver so, so the UCX
// wire-up is complete in both directions when Connect returns and no
// close, orderly or not, finds a wire-up message in flight (UCX 1.12 and
// 1.13 builds with assertions, Debian's among them, abort the process
// when one is purged: openucx/ucx#7648; UCP's keepalive is off too, see
// internal/ucx). The socket stays open for
// the connection's life and carries its few control messages: its end
// tells each side that the other closed or died (ErrRemote); the sender's
// Close sends the number of messages it sent, so that the receiver fails
// exactly the receives no message will match; a receiver's Fail
// (network.Failer) sends its refusal, which the sender's requests then
// fail with (network.Refuser). Closes are ordered so that no worker is
// destroyed with a request or a wire-up message in flight towards it: a
// closing receiver asks the sender to close its endpoint first, and a
// closing sender closes its endpoint, then waits for the receiver to have
// flushed its worker, before destroying its own; an arrival closed
// before it was accepted (Reject, the listener's Close) waits so for the
// sender's Connect to finish its wire-up or fail. Abort (network.Aborter)
// ends a connection without its peer: a peer behind a cut link answers
// none of those messages and takes nothing of a flush, so an orderly close
// would wait closeLinger (10 s) at each step; Abort closes the endpoints by
// force, sends its message without waiting for an answer, and bounds every
// UCX wait by abortGrace (ucx.Worker.Hurry), handing what is still
// pending back to UCX before the worker goes. The transport aborts a
// connection whose stream broke (a failed or timed-out transfer) and every
// connection of an aborted communicator. (UCX before 1.13 does
// not know UCX_RESOLVE_REMOTE_EP_ID: over TCP its wire-up then happens at
// the first rendezvous send, and a close racing it can still abort an
// assertion build of UCX 1.12.)
//
// Each connection has its own worker (created UCS_THREAD_MODE_SERIALIZED
// over a device context shared by the provider's connections on that
// device): tags match per connection, in order, with every tag bit
// significant, and closing a connection ends everything of it. Progress:
// every Request.Test progresses the worker; besides, one goroutine per
// connection sleeps on the worker's event fd (ucp_worker_arm, then Go's
// netpoller: no thread blocked in C) and progresses it when UCX has
// events, so that wire-up and the peer's transfers move on while nobody
// tests here (from the handshake on, so a sender may send, or close,
// before the listener's Accept). Requests are network.Waiters: Wait tests
// the request on the caller's goroutine for the host's spin time
// (GCCL_HOST_SPIN, as the socket provider's waits), then sleeps on the
// worker's event fd itself (in Go's netpoller too, on a dup of its own)
// and tests the request again at each event, while the progress
// goroutine stands aside: the event wakes the waiter, with no hand-off
// from one goroutine to another (on the 2-CPU bed, 1-64 KiB all-reduces
// 1.3-4.5x faster than woken through the progress goroutine, medians of
// 4 rounds; docs/perf-notes.md). An idle connection
// costs a wake-up every 250 ms, never a busy loop. That goroutine runs
// on network.Config.CPUs (topo.Pin) where the endpoint placed the
// connection near its GPU or NIC.
//
// On a TCP device UCX sends transfers below 1 MiB eagerly
// (UCX_RNDV_THRESH=1m) in pieces of up to 1 MiB (UCX_TCP_RX_SEG_SIZE=1m),
// each unless the environment sets it: every transfer the transport
// makes at its defaults goes at once and in one piece, with no
// rendezvous round trip (see tcpEagerLimit). A receiver that posts its
// receive late holds what came meanwhile in UCX's buffers: up to a whole
// message, where above the limit it would hold only the request to send
// it (UCX_RNDV_THRESH bounds it).
//
// Registration is ucp_mem_map of the region (host or CUDA memory type).
// Flush is done at once for host memory; for CUDA memory it is a one-byte
// RDMA read (ucp_get_nbx) of the region through an endpoint to the
// connection's own worker, which completes after the NIC's earlier writes
// into it, as NCCL's UCX plugin flushes GPUDirect receives.
package ucx
