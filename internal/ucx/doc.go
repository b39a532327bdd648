// Package ucx is gccl's only door to UCX's UCP API (libucp.so.0), the
// transport engine under Open MPI and UCC: InfiniBand RC/DC/UD, RoCE, TCP,
// shared memory, and GPUDirect RDMA where UCX was built with CUDA.
//
// Like internal/cuda it declares the subset of the ABI it uses itself
// (shim.c: the parameter structs and the entry points, checked against UCX
// 1.13's headers), opens libucp.so.0 with dlopen when Load is first
// called, and finds every entry point with dlsym: no UCX headers and no
// -lucp at build time. Parameter structs are versioned by their field_mask
// bits, all of which exist since UCX 1.10, so older and newer libraries
// read only the fields gccl sets. Without the library Load returns a
// SystemError wrapping ErrNoLibrary that says to install UCX or use
// GCCL_NET=socket; built without cgo, it says to rebuild with cgo.
//
// The API is small and in Go terms: a Context (ucp_init, its resources and
// memory types, ucp_mem_map), Workers (one progress engine each, created
// UCS_THREAD_MODE_SERIALIZED and serialised by a mutex), Endpoints
// (ucp_ep_create from a worker address, with peer error handling),
// Requests (tag send/receive nbx, tested with ucp_request_check_status /
// ucp_tag_recv_request_test, cancelled, freed). Nothing progresses by
// itself: Request.Test progresses the worker, and Worker.Wait sleeps on
// the worker's event fd (ucp_worker_arm, then Go's netpoller, so that no
// thread blocks in C) for waits with deadlines, so an idle worker burns
// no CPU. Go memory a request uses is pinned
// (runtime.Pinner) until the request is done or its worker is closed.
// Failures are *gccl.Error values: RemoteError when the peer failed,
// InvalidUsage for a truncated receive, SystemError otherwise, with the
// ucs_status_t as the cause (Status).
package ucx
