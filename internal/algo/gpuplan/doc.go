// Package gpuplan is the GPU backend's plan for one operation, as pure
// code in package algo's vocabulary (Kind, Algorithm, Protocol and the
// GCCL_ALGO / GCCL_PROTO lists): which kernel runs it, with which grid,
// over which area of the communication buffer. It does no I/O and reads
// no clock, so its choices are golden-tested (testdata/n{1,2,4,8}.txt,
// rewritten by go test -run TestGolden -update) and property-tested.
//
// Choose is the choice for one operation, from what the engine knows at
// launch (Input: kind, size, ranks, in place, PreMulSum, peers mapped,
// capturing, registrations, a point-to-point peer's link, Settings) to a Choice: the path (Kernel: none,
// copy, oneshot, push, pipelined, zerocopy, p2p, viahost; Family names its
// kernel in package kernels), the grid and the area the kernel uses as
// scratch. Its doc lists the order of the rules. Input.RegLookup and
// Input.CaptureMatters tell the engine which of its costlier questions (a
// registration lookup or agreement, a driver call) the answer depends on.
// The sizes of the communication buffer, the size limits and the grid
// rules (Settings, Channels, LLGrid, P2PChannels) live here too, so the
// engine reads them rather than restating them; a test pins what they
// restate of package kernels.
//
// Across hosts (package gpunet, ring.go): RingOrder is the ring a GPU
// communicator across hosts connects at setup (ranks grouped by host, so
// it crosses the network once out of each host whatever the rank
// placement) and RingNetEdges how many of its edges cross the network;
// Ring.Channels is one collective's grid, the fewest channels within
// 1/16 of the best time of an alpha-beta model of the ring's direct and
// network edges (per-hop latency, per-channel bandwidth, the proxy's cost
// per channel), at most GCCL_NET_NCHANNELS. Golden tables:
// testdata/ring-order.txt and testdata/ring-channels.txt (same -update).
//
// Link: the only rule that reads a peer's link (transport/topo.LinkKind)
// is P2PChannels, which gives a pair over PCIe at most P2PChannelsPCIe
// channels. The collectives' grids, LL and push limits still assume the
// NVLink machine they were tuned on (H100/H200 with NVSwitch); they are
// the same for every link until a PCIe machine measures otherwise.
package gpuplan
