// Package network is gccl's network provider interface: how ranks on
// different hosts move bytes, shaped like NCCL's net API (ncclNet_t), so
// that a provider for another fabric is one package that implements it.
//
// A Provider names its devices (NICs, or whatever the fabric calls the
// endpoints it can drive) and their Properties: speed, latency, which memory
// it can register (host, CUDA), how many requests may be in flight. A rank
// opens a Listener on one device per communicator; its Handle (opaque bytes,
// at most MaxHandleSize) travels to the peers through the bootstrap's
// all-gather, inside the rank's transport.PeerInfo. A peer's Connect with
// that handle gives a SendComm; the listening rank's Accept, naming the
// connecting rank and channel, gives the matching RecvComm. Connections are
// one-way and ordered: the sender's Isends arrive in order at the receiver's
// Irecvs, matched by tag.
//
// Data moves with nonblocking requests: Isend and Irecv post a transfer of a
// Region (host memory, or CUDA memory where Properties.Memory has MemCUDA)
// registered with Register, and Request.Test says when it is done and how
// many bytes arrived. A receive into CUDA memory the NIC wrote directly
// (GPUDirect RDMA) needs Flush before the GPU reads it. Every call is
// nonblocking except Connect and Accept, which wait within their context.
//
// The providers: socket (TCP, several sockets and helper goroutines per
// connection, GCCL_SOCKET_NTHREADS and GCCL_NSOCKS_PERTHREAD as in NCCL)
// and ucx (UCX's UCP API, loaded at run time: InfiniBand, RoCE, TCP, shared
// memory). package transport picks one per endpoint (GCCL_NET, NCCL_NET;
// transport.Config.NetName) and turns its requests into transport.Conns.
//
// Writing a provider: implement Provider, SendComm, RecvComm and Request
// below, and where the fabric allows the optional Waiter (block on a
// request instead of polling Test), Failer and Refuser (a receiver's error
// travels back to the sender, a sender's forward to the receiver); run the connections' long-lived progress
// goroutines on Config.CPUs (start each with topo.Pin and defer its
// unpin); honour contexts' deadlines in Connect,
// Accept and Wait; return gccl errors (gccl.ErrRemote for a peer that
// closed or died, gccl.ErrSystem for a local failure,
// gccl.ErrInvalidArgument for a bad handle or region, gccl.ErrTimeout for
// an expired deadline); make Close release everything; run the
// conformance suite, networktest.Run, from a test of the provider's
// package (it checks all of this, leaks included); then add the provider
// to transport's provider table (one row). transport/network/socket is
// the example to read.
package network
