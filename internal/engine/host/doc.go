// Package host is the engine's host backend: the same operations over host
// memory and host streams (package hoststream), SHM between the ranks of a
// host and sockets across hosts (package transport). It is what runs on a
// machine without a GPU, and what the GPU-via-host backend runs its host
// copies on.
//
// Open opens the transport endpoint and exchanges every rank's address
// (and the settings the ranks must share) over the bootstrap; connections
// are made on first use, all the peers and channels an operation needs at
// once (each Connect waits for the peer's, so one-by-one could wait in a
// cycle).
//
// Submit enqueues one task per launch on its host stream, its other
// streams joined to it by events. The backend is an engine.Joiner: in a
// group, the launches of several engines that share a stream become one
// task that runs them concurrently (task.go): run one after the other, two
// communicators' launches could each wait for peers that another rank
// queued in the other order, and NCCL treats a group as one call, so only
// each communicator's own order must match across ranks. A task waits for
// each launch's turn, runs its collectives in order with the plans of
// package algo, then its point-to-point ops, one lane per peer and
// direction: lanes of a launch of at most 1 MiB (inlineBytes: a 2x2 halo
// of faces up to 128 KiB) whose sends all fit in their shared-memory
// rings run one after the other on the stream's goroutine,
// sends first (no send waits, so no receive waits for anything but a
// peer's send); others run on a goroutine each. A launch of one stream
// allocates nothing (TestLaunchAllocations, TestHaloAllocations): its
// task, lanes, wait scope and ops' storage are reused.
//
// A task is a hoststream.Starter (start.go): onto an idle stream, once
// its turn has come, a launch whose sends all fit their connections'
// buffers and come before anything else it does (such a small Send/Recv
// launch, or a collective of a direct schedule) sends on the caller's
// goroutine in Submit, and its receives are left to the caller's
// Synchronize, which runs them on its own goroutine: no hand-off to the
// stream's worker and back, no wake-up per launch. Where nobody
// synchronizes the worker takes them after a millisecond or two; a
// launch that must wait for its turn hands the backend's held launch to
// its worker at once. A plan runs on a runner (package runner, one per
// channel, kept from one collective to the next): a send its connection
// buffers now (transport.Buffered) is sent on the runner's goroutine, the
// others on a goroutine per peer; receives reduce straight out of the
// transport's pieces, and a step that writes a range first waits for the
// posted sends still reading it. A failed launch records the
// engine's async error and the stream's Synchronize returns it.
//
// Channels (channels.go), as NCCL's: where the ranks span hosts, a large
// collective is cut into parts (algo.ChannelPart) that run at once, each
// on its own goroutine with its own plan, runner, scratch and connections
// (transport channel c to each peer), so that several messages are in
// flight per peer and the reductions run on several cores; a channel that
// fails cancels the others, and the first failure is reported. How many:
// one per 64 KiB per rank of data (algo.NumChannels), at most
// Config.Channels (GCCL_NET_NCHANNELS, default 4); one on a single host
// and for point-to-point ops. The channel count and the chunk size
// (GCCL_CHUNKSIZE) shape every rank's plans, so Open all-gathers them
// with the addresses, and ranks that differ fail Open with
// gccl.ErrInvalidUsage naming the setting.
//
// Zero-copy: when every rank is on one host (all peers reached through
// SHM) Open also opens the ranks' zero-copy path (package zerocopy: a
// control block per rank in host shared memory, peers' buffers mapped)
// and the collectives first try the ZeroCopy algorithm (GCCL_ALGO can
// exclude it: "^zerocopy"); where a peer's buffer cannot be mapped, every
// rank runs the step schedule instead.
//
// Ranks that disagree (package opdesc): every message on a transport
// carries a 24-byte descriptor of its operation (the collective's number,
// or the Send's number with that peer after how many collectives; kind,
// count, type, operator, root or sender), and the transport adds its
// length, once per message. The receiver checks both before it uses a
// byte; zero-copy and copy-in ranks publish the same descriptor in their
// control block and compare at the first barrier. A mismatch is
// gccl.ErrInvalidUsage naming both ranks; the refusing rank tells the
// sender (transport.Conn.Fail), and any failed operation tells every
// connected peer (fail.go), so that peers waiting for this rank fail at
// once with its error instead of waiting for the deadline, and the
// communicator (its async error) is failed.
//
// Avg reduces as Sum then divides by the rank count. A CreatePreMulSum
// operator is NCCL's Σ_r s_r·x_r: each rank scales a copy of its own input
// by its own scalar, then the ranks reduce as Sum. The arithmetic is
// DefaultReducer (package internal/reduce: every data type and operator)
// unless Config.Reducer replaces it.
package host
