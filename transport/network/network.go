package network

import (
	"context"
	"errors"
	"time"
	"unsafe"

	"github.com/gccl/gccl/transport/topo"
)

// MaxHandleSize bounds a listener's handle, as NCCL_NET_HANDLE_MAXSIZE.
const MaxHandleSize = 128

// Handle is what a peer needs to connect to a Listener: an address, a
// worker address, ... It is opaque to everyone but its provider.
type Handle []byte

// MemKind is a kind of memory a provider may register.
type MemKind uint8

const (
	MemHost MemKind = 1 << iota // host memory
	MemCUDA                     // CUDA device memory (GPUDirect RDMA)
)

// Properties describe one device of a provider (ncclNetProperties_t).
type Properties struct {
	Name      string  // "eth0", "mlx5_0:1", ...
	PCIPath   string  // the device's sysfs PCI path, "" when it has none (loopback, TCP)
	Speed     int     // link speed in Mbit/s, 0 when unknown
	Latency   float64 // one-way latency in microseconds, 0 when unknown
	Memory    MemKind // the memory Register accepts
	MaxComms  int     // connections the device supports, 0 for no limit
	MaxRecvs  int     // requests one Irecv may group (1 here)
	InFlight  int     // requests a connection may have in flight
	Transport string  // what carries the bytes: "tcp", "rc", "dc", "rc_mlx5", "shm", ...
	RDMA      bool    // the device moves bytes by RDMA (InfiniBand, RoCE): what GCCL_NET=auto looks for
}

// Peer names one end of a connection: the connecting rank and the channel
// (connections between two ranks are numbered by channel).
type Peer struct{ Rank, Channel int }

// Provider is a network provider (ncclNet_t).
type Provider interface {
	// Name is the provider's name in GCCL_NET and logs: "socket", "ucx".
	Name() string
	// Devices lists the devices the provider can use, best first. An error
	// says why the provider cannot run here (library missing, no device).
	Devices() ([]Properties, error)
	// Listen opens a listener on device dev for cfg's rank and
	// communicator; connections must present cfg's communicator id and
	// prove its secret.
	Listen(dev int, cfg Config) (Listener, error)
	// Connect opens a sending connection, on channel, from cfg's rank to
	// the listener whose handle is h. It waits within ctx for the network
	// to establish it, never for the peer's Accept.
	Connect(ctx context.Context, dev int, h Handle, cfg Config, channel int) (SendComm, error)
}

// Config says whose a listener or connection is: the communicator, its
// unique ID's secret (both ends must know it), this rank, and the deadline
// of waits whose context has none (handshakes); and where its progress
// goroutines should run.
type Config struct {
	CommID  [16]byte
	Secret  [16]byte
	Rank    int
	Timeout time.Duration
	// CPUs are the CPUs near the rank's GPU (or device) that its
	// connections' long-lived progress goroutines should run on: each
	// starts with topo.Pin(CPUs) and defers its unpin. nil leaves them
	// where the runtime puts them.
	CPUs topo.CPUSet
}

// Listener accepts connections on one device (a listenComm).
type Listener interface {
	// Handle is what peers pass to Connect.
	Handle() Handle
	// Accept returns the receiving end of from's connection, waiting
	// within ctx for it to arrive.
	Accept(ctx context.Context, from Peer) (RecvComm, error)
	// Reject tells a connection from "from" that arrives, or has arrived,
	// that nobody will receive from it.
	Reject(from Peer)
	Close() error
}

// Region is memory to send from or receive into: host memory (which the
// caller keeps alive, and pinned with runtime.Pinner where it is Go memory,
// until the requests using it are done) or CUDA device memory (Ptr is then
// the device address, never dereferenced on the host).
type Region struct {
	Ptr  unsafe.Pointer
	Len  int
	Kind MemKind
}

// HostRegion is the region of p's bytes. p must stay alive and unmoved
// (runtime.Pinner) until every request using the region is done.
func HostRegion(p []byte) Region {
	if len(p) == 0 {
		return Region{Kind: MemHost}
	}
	return Region{Ptr: unsafe.Pointer(&p[0]), Len: len(p), Kind: MemHost}
}

// Bytes is the host region r as a slice (nil for CUDA memory).
func (r Region) Bytes() []byte {
	if r.Len == 0 || r.Ptr == nil || r.Kind != MemHost {
		return nil
	}
	return unsafe.Slice((*byte)(r.Ptr), r.Len)
}

// MemHandle is a registration of a region with one connection (regMr).
type MemHandle interface{ Region() Region }

// Request is a posted transfer.
type Request interface {
	// Test reports whether the transfer is done and, for a receive, how
	// many bytes arrived; an error ends the request. Once Test reported
	// done (or an error) the request is spent, as in NCCL: the provider may
	// reuse it for a later transfer, so the caller must not use it again.
	Test() (done bool, n int, err error)
}

// Waiter is an optional interface of Requests: Wait blocks until the
// request is done, as a loop on Test would, without polling. When ctx has
// no deadline the provider's Config.Timeout bounds the wait. An expired
// wait is gccl.ErrTimeout and leaves the request pending (Test or Wait it
// again); any other error, or success, spends it as Test does.
type Waiter interface {
	Wait(ctx context.Context) (n int, err error)
}

// Failer is an optional interface of RecvComms and SendComms: Fail tells
// the other end that this end failed because of err, and fails this end's
// pending and later requests with it. On a RecvComm (it refused a
// message) the sender's pending and later Isends fail with err's code and
// message instead of waiting; on a SendComm (its user stopped and will send
// nothing more) the receiver's pending and later Irecvs do. A provider
// without it lets the caller Abort the connection instead, which the peer
// sees as gccl.ErrRemote.
type Failer interface{ Fail(err error) }

// Poller is an optional interface of RecvComms: PollOnly says that the
// caller will Test the connection's oldest receive over and over until
// Close (a progress loop, such as the GPU proxy's), and will not Wait, so
// that the provider need not be woken to read what arrives on its own:
// the socket provider then stops waking its reader goroutine for every
// transfer (a wake-up that the sender's write paid for). The end of the
// stream and failures are still noticed without a Test.
type Poller interface{ PollOnly() error }

// Refuser is an optional interface of SendComms: Refusal is the failure
// the receiving end sent with Failer.Fail, nil if none came.
type Refuser interface{ Refusal() error }

// Aborter is an optional interface of SendComms and RecvComms: Abort
// ends the connection as Close does, but at once, without waiting for the
// peer to acknowledge or to take what is in flight (pending requests
// fail; the peer sees gccl.ErrRemote): for a connection whose peer may be
// unreachable (a link cut, a host frozen) or that is being aborted. Called
// while a Close waits for the peer, it cuts that wait short. A provider
// whose Close never waits for the peer needs no Abort; callers fall back
// to Close (see Abort).
type Aborter interface{ Abort() error }

// ErrPeerClosed is the cause (errors.Is) of a request's gccl.ErrRemote
// when the peer ended the connection in order, with its Close (not Abort,
// not by dying), and nothing more will come: a receive no transfer will
// fill, a send after the receiver closed. A caller may take it as the end
// of an idle connection rather than a failure; a transfer it still needed
// fails all the same. A provider that cannot tell an orderly close from a
// failure never returns it.
var ErrPeerClosed = errors.New("the peer closed its end of the connection in order")

// Abort ends c with its Abort where it is an Aborter, else with Close.
func Abort(c Comm) error {
	if a, ok := c.(Aborter); ok {
		return a.Abort()
	}
	return c.Close()
}

// Comm is what both ends of a connection can do.
type Comm interface {
	// Register registers r for transfers on this connection (regMr);
	// r.Kind must be in the device's Properties.Memory.
	Register(r Region) (MemHandle, error)
	Deregister(m MemHandle) error
	// Close ends the connection; pending requests fail.
	Close() error
}

// SendComm is the sending end of a connection.
type SendComm interface {
	Comm
	// Isend posts the send of r (inside m's region) with tag; nil Request
	// and nil error mean the provider cannot take more now (retry).
	Isend(r Region, m MemHandle, tag uint32) (Request, error)
}

// RecvComm is the receiving end of a connection.
type RecvComm interface {
	Comm
	// Irecv posts a receive of at most r.Len bytes into r (inside m's
	// region), matched with the sender's Isend of the same tag; nil Request
	// and nil error mean retry later.
	Irecv(r Region, m MemHandle, tag uint32) (Request, error)
	// Flush makes bytes a completed Irecv wrote into CUDA memory visible to
	// the GPU (GPUDirect RDMA); it returns a done request for host memory.
	Flush(r Region, m MemHandle) (Request, error)
}

// Slice is the part [off, off+n) of r.
func (r Region) Slice(off, n int) Region {
	if off < 0 || n < 0 || off+n > r.Len {
		panic("network: Region.Slice out of range")
	}
	return Region{Ptr: unsafe.Add(r.Ptr, off), Len: n, Kind: r.Kind}
}
