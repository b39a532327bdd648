// Package random is gccl's seeded random-sequence test: every rank draws the
// same sequence of operations from a seed, runs it, and checks every element
// of every result. It looks for what fixed matrices miss: operations that
// disturb the next ones (reused flags and buffers, stale bytes), one
// communicator's operations spread over several streams, several
// communicators of one rank used at once, on their own streams and on shared
// ones, and groups mixing all of these.
//
// # The sequence
//
// For each seed, every rank makes three communicators: the world (all
// ranks), a duplicate of it (a second unique ID), and the world split by rank
// parity with the ranks reversed (ranks 0 and 2 of four form one, 1 and 3 the
// other). Every rank makes a few streams on its device, and each
// communicator uses two or three of them, drawn from fewer than the three
// use between them, so that at least two communicators share a stream
// (every rank the same streams). The sequence is cut into batches of one to
// six operations: a batch is launched operation by operation, each on a
// stream of its communicator drawn at random, with no synchronisation
// between streams, or, one batch in four, as one group (package group) that
// may span the three communicators. gccl must run one communicator's
// operations in issue order whatever their streams, as NCCL does.
//
// A group keeps its operations' drawn streams, so it exercises both forms of
// issue 16: one communicator's operations on several streams (the launch
// joins them, NCCL >= 2.20), and several communicators on one shared stream.
// Each rank adds a group's operations in its own order, a random
// interleaving of the communicators' operations drawn from the seed of the
// group's first operation and the rank's world rank: the order of different
// communicators' operations differs between ranks, each communicator's
// operations stay in the drawn order, which is all NCCL asks of a group.
// gccl must then agree on one order for the communicators' launches on a
// shared stream. TestDrawGroups checks that the drawn sequences hold such
// groups.
//
// After a batch every stream is waited for (with MPI progress and the
// -random.timeout deadline), the communicators' asynchronous errors are read
// and every operation is checked; then the ranks agree whether any failed,
// and all stop together if one did.
//
// An operation is one of the five collectives or a point-to-point pattern
// (harness.P2PKinds: a Send/Recv pair, a shift, AllToAll, AllToAllv,
// NeighborExchange, Scatter, Gather; in a group, their Sends and Recvs) with
// a random data type, reduction operator (PreMulSum too, with the same scalar
// on every rank and in host or device memory, since gccl computes (Σx)·s, not
// NCCL's Σ s·x: issue 16), root, placement (collectives in or out of place)
// and count: 0, 1, 7, small odd counts, counts around the 128 KiB and 1 MiB
// thresholds, up to -random.maxcount elements for about 5% of operations.
// Buffers start at aligned addresses or one to three elements past them.
//
// # The checks
//
// Inputs are random (harness.Input of the operation's seed and the rank),
// everything else is Poison before the batch. Afterwards the receive buffer
// must match internal/reduce's reference (bit for bit for integers and for
// anything only moved, within reduce.Check's tolerance for floating-point
// reductions; Poison where nothing may be written, as on a Gather's non-root),
// an out-of-place send buffer must still hold the input, and the 64 bytes
// after each buffer must still be Poison. A failure names the seed, the
// operation's index and description (its stream is the index among the
// rank's streams), the rank, how many elements are wrong and the first four,
// with a command line that replays it; a group that fails names the order in
// which the rank added its operations.
//
// # Running it
//
// In one process, ranks are goroutines of one communicator made with
// comm.InitRankConfig on one device (-gccl.device, default 0): `go test
// ./test/random` runs TestShared with 2, 3 and 4 ranks on the host backend (or
// a GPU where present), 2 seeds of 500 operations each (100 operations of at
// most 16 Ki elements under -race, for make test). Under mpirun, TestMPI runs
// one rank per process (mpiboot.NewComm); test/run.sh runs it with 2, 3 and 4
// processes on the host backend.
//
//	go test ./test/random -run TestShared -random.shared 4 -random.seeds 20 -random.ops 500
//	mpirun -np 3 random.test -test.run TestMPI -random.seeds 20 -random.ops 500 -random.backend host
//	mpirun -np 4 pkg.test -test.run TestMPI -gccl.device 0 -random.backend cuda   # processes sharing GPU 0
//	pkg.test -test.run TestShared -random.shared 4 -random.backend cuda           # 4 ranks on GPU 0
//
// Flags: -random.seed (the first seed; 0 picks one and prints it),
// -random.seeds, -random.ops, -random.maxcount, -random.shared (ranks in one
// process), -random.streams (at most this many streams per communicator:
// the same operations on fewer streams, still shared where the draw shares
// them), -random.backend (auto, host or cuda; auto means a GPU where
// present unless GCCL_DEVICE=host), -gccl.device, -random.timeout and
// -random.v (log every batch). In one process the ranks' streams together
// number at most 32 (32/n per rank, fewer shared by more communicators):
// on a GPU they share one context's 32 hardware queues (docs/gpu.md).
// scripts/gpu-bundle.sh builds the test binary
// into tests/test-random/pkg.test, since the tests call cudatest.RequireGPU
// when asked for the cuda backend.
package random
