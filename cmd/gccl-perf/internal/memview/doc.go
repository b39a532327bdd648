// Package memview is gccl-perf's memory-traffic view on a GPU (-mem): for
// each row, the bytes gccl's kernels read and write in device memory on
// the busiest GPU (gpu.TrafficOf of the path the engine took, ranks on one
// GPU added up) over gccl's time, against a device-to-device copy of the
// row's size timed by rank 0 with the same events and batches: the
// yardstick where NCCL cannot run. The copies rotate over buffer pairs
// whose footprint is twice the GPU's L2 cache, so that the yardstick is
// the memory system's speed, not the cache's.
package memview
