// Package proxy is the host side of a GPU communicator's connections
// across hosts: FIFOs in pinned host memory that the kernels write and
// read, and the per-communicator proxy goroutine that moves their slots
// over network provider connections (transport/network). The contract
// between the kernels, this package and the backend is docs/gpunet.md;
// this package implements its "FIFO layout" and "The proxy goroutine"
// sections.
//
// # FIFOs
//
// A FIFO is one direction of one connection: a 4096-byte header (tail at
// TailOffset, head at HeadOffset, sizes[NSlots] at SizesOffset) then
// NSlots slots of SlotBytes each, FIFOBytes(SlotBytes) in all. FIFO is a
// view of that memory, which its caller owns (cuMemHostAlloc in
// production, Go memory in tests); its accessors are atomic. Counters
// start at 0 and only grow for the connection's life: kernels read their
// position from them when they start, so CUDA graph replays need no host
// call.
//
// # The proxy
//
// New starts one Proxy per rank; AddSend and AddRecv hand it a FIFO and
// its connection (at setup, or later: point-to-point connections are made
// on first use), registering the FIFO's whole memory with the connection
// once. From then on the proxy owns the connection, and Close closes it:
// that is what guarantees that no provider goroutine still writes into a
// FIFO once Close returns, whatever was in flight.
//
// One goroutine serves every connection. For a sending FIFO it posts an
// Isend of each slot the GPU posted (sequence numbers below tail, tag
// uint32(s), sizes[s%NSlots] bytes), completes them in order and stores
// head = s+1 after each. For a receiving FIFO it keeps an Irecv of a whole
// slot posted for every sequence number below head+NSlots (head being the
// slots the GPU consumed), completes them in order and stores sizes[s%NSlots]
// then tail = s+1. A provider's nil request with nil error means "retry
// later" and is retried on the next pass; NSlots bounds the requests a
// connection has in flight, so a provider whose Properties.InFlight is
// smaller is simply asked again.
//
// The goroutine polls without pause (runtime.Gosched when a pass moved
// nothing) while sends are in flight, while it is held (Hold) and for
// Config.Spin (GCCL_PROXY_SPIN, default 1ms) after a Kick (the backend
// kicks on every launch it enqueues) or after any transfer progressed;
// otherwise it sleeps, 1 µs first, doubling up to 100 µs, and a Kick, an added
// connection or Close wakes it. It sleeps on a futex (internal/futex),
// not a Go timer, because Go rounds timers under a millisecond up to about
// one on Linux when the process is otherwise idle; the kernel's timer
// slack (about 50 µs) still lengthens the short sleeps; without a kick,
// work is found within about 150 µs and then served hot. Graph replays
// have no launch to kick, so package gpunet holds the proxy (Hold) for as
// long as a CUDA graph holding the communicator's launches exists, as
// NCCL's proxy thread polls its persistent graph operations: the cost is
// one goroutine polling per such communicator, all the time, even between
// replays (crowded, it still gives its P back as below), against a host
// node per captured launch that every later operation of the graph had to
// wait for (the driver's callback latency: a small captured all-reduce
// took 48-79 µs against 38 µs eager on an H100). In steady state a transfer allocates nothing (the socket
// provider reuses its requests too): TestNoAllocations checks it.
//
// Testing a receive costs what the provider's Test costs: the socket
// provider's reads the connection's control socket, a system call whether
// anything arrived or not, and a pass tests the oldest receive of every
// receiving connection. Where most connections idle (a small operation
// uses one channel of GCCL_NET_NCHANNELS, the rest carry nothing) those
// calls lengthened every pass, and so the time from the GPU's tail to the
// Isend and from an arrival to the tail the proxy stores: on a 2-CPU
// machine, 3 idle channels each way added about 3.5 µs to a 512-byte hop
// (BenchmarkPingPong, idle=0 against idle=3). So a receiving connection
// on which nothing arrived for the last millisecond is quiet: a hot pass
// tests its receives on every 8th pass only (the provider's own reader
// goroutine still completes them meanwhile), and the first pass after a
// sleep tests every connection. A quiet connection's first slot is seen at
// most 8 passes later; TestQuietReceives counts the tests. Since the
// goroutine tests every receive itself, AddRecv puts a provider that can
// into poll-only mode (network.Poller): the socket provider then no
// longer wakes its reader goroutine, and Go's network poller thread, for
// every frame, a wake-up the sender's write paid for (on a 2-CPU VM, with
// a poller thread to wake, a 512-byte Isend took 5.1-7.3 µs, 4.8-4.9
// without; BenchmarkPolled in transport/internal/net).
//
// Spinning and futex sleeps keep the goroutine's P. That is harmless while
// other Ps are idle, but the socket provider's goroutines are woken by
// Go's network poller, which runs when a P has nothing to do (or from
// sysmon, every 10 ms at worst): where proxies hold every P, transfers
// wait for it. So a proxy that finds itself crowded (more than half as
// many proxies in the process as Ps, GOMAXPROCS, re-read every
// millisecond: ranks sharing a small machine, tests) gives its P back
// instead: it sleeps on Go timers, and
// every 8th hot pass that moved nothing sleeps 1 µs. Small slots do not
// wait for the poller: the socket provider's Isend writes them and its
// Test reads them on the proxy's goroutine. On a 2-CPU machine a
// 512-byte round trip through two crowded proxies took 27-34 µs (median;
// BenchmarkPingPong), through the provider alone, its waits sleeping as a
// host rank's do there, 31-67 µs (BenchmarkPingPongProvider), and
// BenchmarkPingPongProcesses runs each proxy in a process of its own, as
// ranks are; throughput is about the provider's (BenchmarkThroughput,
// BenchmarkThroughputProvider).
//
// # Failures
//
// The first failure stops the service of every connection: a request
// that failed (the peer closed or died, garbage on the wire: the
// provider's error, whose code is kept), a sending connection with slots
// to send that made no progress for Config.Timeout (GCCL_TIMEOUT:
// gccl.ErrTimeout), counters or sizes that break the FIFO rules (a tail
// that goes back or runs more than NSlots ahead of head, a size larger
// than the slots, a head past the tail: gccl.ErrInternal), or a failure
// this rank's kernel stored in the status word (any code but
// kernels.StatusNetwork: the ranks launched different operations, a
// kernel's wait timed out, an abort), with the kernel's typed error, so
// that peers waiting for what that kernel will never send stop at once
// rather than at their deadline. The error is a
// *gccl.Error naming the connection (peer rank, channel, direction) and
// the slot; Err returns it, kernels.StatusNetwork is stored in the status
// word if it still holds 0 (the kernels' waits poll it and stop), and
// every connection whose provider is a network.Failer passes the error to
// its peer, a receiving one to its sender and a sending one to its
// receiver (a sending connection without it is aborted), whose proxy then
// stops too: a sending connection that is a network.Refuser is checked
// for such a refusal on every pass, with or without slots to send. Both
// directions are needed: on a ring whose ranks of one host are joined by
// direct edges (no proxy), a rank past such an edge learns of the failure
// only through its own network connection, whichever way that points.
//
// A receiving connection has no deadline of its own: its receives are
// posted ahead of any launch, so an idle peer cannot be told from a stuck
// one there. A stuck peer is caught by its own proxy's send deadline and
// by the kernels' timeout (kernels.StatusTimeout), a dead one by the
// provider's error. A peer's orderly Close is no failure: the provider
// says so (network.ErrPeerClosed, its bye), and the proxy stops serving
// that receiving connection quietly; a slot posted towards that peer, or
// a launch kicked after it, fails (StatusNetwork, naming the peer). Stop
// (Finalize's quiesce, and Close's first step) sends the posted slots,
// then stops serving, keeping the connections; Close then closes them,
// and Abort ends them with network.Abort (no bye), not waiting for peers.
package proxy
