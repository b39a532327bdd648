package memory

import "sync/atomic"

// live counts the allocations of every Fake of this process not yet freed:
// mapped device memory (cuMemAlloc, cuMemCreate, opened IPC handles,
// imported FDs) and pinned host memory (cuMemHostAlloc). It spans fakes on
// purpose: a test that drops a Fake without freeing its memory leaks the
// mappings and files behind it, and the leak check that reads Live sees
// every fake a package's tests made.
var live atomic.Int64

// Live is the number of allocations made through any Fake of this process
// and not yet freed: device memory from cuMemAlloc or cuMemCreate, memory
// mapped from an IPC handle or an imported FD, and pinned host memory.
// internal/leakcheck fails a test binary that ends with more than it
// started with.
func Live() int { return int(live.Load()) }
