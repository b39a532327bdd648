// Package gpu is the engine's GPU backend: operations run as kernels
// (package kernels) on the caller's CUstream over device memory that the
// peers map (transport/p2p). Nothing on the host waits for the GPU: the
// kernels synchronise among themselves through flags and counters in
// device memory, so a captured CUDA graph can be replayed any number of
// times.
//
// Open loads the kernels, allocates this rank's communication buffer
// (flags, a direct area for the one-shot and push kernels, a bulk area for
// the staged kernels) and counters, and exchanges the buffers with the
// peers, checking that every rank runs with the same settings
// (GCCL_MAX_NCHANNELS, GCCL_PROTO, GCCL_GPU_BUFFSIZE, GCCL_GPU_LL_MAX,
// GCCL_GPU_PUSH_MAX) and recording the link to every peer (links.go:
// each rank sends its view of its GPU's links, by GPU UUID, and both ranks
// of a pair take topo.Agree of their two views; ranks on one GPU are "same
// device"); the point-to-point grids read it (fewer channels over PCIe,
// gpuplan.P2PChannels). Submit waits for the launch's turn, joins its stream
// to the communicator's previous one and to the launch's other streams
// (chain.go: the launch waits for what they ran before, they wait for
// the launch; all eager or all in one capture, else gccl.ErrInvalidUsage
// before anything is enqueued), enqueues the collectives in order and
// then one P2P kernel for the point-to-point ops, and ends the launch
// before it returns.
//
// The kernel of a collective: a one-rank communicator copies (a copy node
// when captured, a copy engine transfer from 8 MiB, the copy kernel
// gccl_copy below); up to GCCL_GPU_LL_MAX
// bytes the one-shot (LL) kernel through the direct areas; registered
// buffers run zero-copy, the kernels loading and storing the peers'
// registered buffers (registered.go, with the registrations found, agreed
// on while capturing and held by package regs), the kernels comparing a
// key of the registrations at their first barrier; otherwise the push
// all-reduce up to GCCL_GPU_PUSH_MAX, else the staged kernels, which move
// the data through the bulk areas segment by segment. PreMulSum passes
// its scalar (its bits, or its device pointer for ScalarDevice) to the
// kernels, which read it when they run, and never runs zero-copy.
//
// A kernel reports a failure (timeout, abort, ranks that disagree on
// registration) in the status word of the host-mapped control block
// (package ctlblock, as gpunet), which the next Submit turns into the
// engine's async error; Close(abort) raises the block's abort word, which
// the kernels poll. LastPath and TrafficOf say which kernel ran and what it
// moved (for gccl-perf).
//
// The registrations are the communicator's cache (internal/regcache),
// which Config.Regs hands the backend; the backend never looks them up
// by anything else.
package gpu
