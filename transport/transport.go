package transport

import (
	"context"
	"time"

	"github.com/gccl/gccl/internal/env"
	"github.com/gccl/gccl/transport/internal/msg"
	"github.com/gccl/gccl/transport/internal/shm"
	"github.com/gccl/gccl/transport/topo"
)

// DescSize is the size of a message's descriptor.
const DescSize = msg.DescSize

// Desc is a message's descriptor: bytes the sender attaches to a message
// and the receiver sees, with the message's length, before any of its
// bytes. The transport carries it once per message and gives it no
// meaning; the host backend says there which operation the message
// belongs to (internal/engine/host/opdesc).
type Desc = msg.Desc

// Conn is one direction of a connection to one peer: an ordered, reliable
// sequence of messages, each a descriptor and zero or more bytes.
type Conn interface {
	// Send transmits one message, d and p, in order; it returns when p may
	// be reused.
	Send(ctx context.Context, d Desc, p []byte) error
	// Recv receives the next message: it hands its descriptor and length to
	// accept before any byte, then every byte to consume, in order, in
	// pieces valid only during the call (so SHM slots can be reduced from
	// in place). An error from accept or consume ends Recv and is returned
	// as is; the connection is then unusable (Fail it).
	Recv(ctx context.Context, accept func(d Desc, n int) error, consume func(piece []byte) error) error
	// Fail marks this end failed because of err: the peer's Send or Recv on
	// the other end, in progress or later, fails with err's code and
	// message instead of waiting. Best effort; it never blocks for long.
	Fail(err error)
	Close() error
}

// Buffered is a sending Conn whose messages wait for the peer in a
// buffer of its own (the shared-memory ring), counted in units: Free are
// free now and a message of n bytes takes Takes(n). Messages that take no
// more than Free units in all are sent, in order, without waiting for the
// peer. Free is not safe concurrently with Send.
type Buffered interface {
	Free() int
	Takes(n int) int
}

// Refuser is implemented by the sending Conns of the transports: Refusal
// is the peer's failure record (it refused a message), nil if none came.
type Refuser interface{ Refusal() error }

// Expect is the accept function of a Recv that takes a message of n
// bytes, whatever its descriptor.
func Expect(n int) func(Desc, int) error { return msg.Expect(n) }

// Config describes a rank's endpoint for one communicator. CommID, Secret and
// Rank are required; every other zero field takes its default (from the
// environment where a GCCL_/NCCL_ variable exists).
type Config struct {
	Rank   int
	CommID [16]byte // the communicator's id
	Secret [16]byte // the unique ID's secret; sockets must present it

	Timeout  time.Duration // deadline of waits whose ctx has none; 0 = GCCL_TIMEOUT
	HostHash uint64        // 0 = topo.HostHash()

	ShmDisable  bool   // true, or GCCL_SHM_DISABLE=1, turns the SHM transport off
	ShmDir      string // where rings live; "" = /dev/shm
	ShmSlotSize int    // 0 (with ShmSlots 0) = GCCL_BUFFSIZE / shm.DefaultSlots
	ShmSlots    int    // 0 = shm.DefaultSlots

	// NetName is the network provider: auto, socket or another row of the
	// provider table; "" = GCCL_NET (NCCL_NET), whose default is auto.
	NetName   string
	IBDisable bool   // true, or GCCL_IB_DISABLE=1, keeps auto off RDMA providers
	IfName    string // the socket provider's interfaces; "" = GCCL_SOCKET_IFNAME
	// NetThreads and NetSocksPerThread shape the socket provider's
	// connections: helper goroutines, and data sockets each; 0 =
	// GCCL_SOCKET_NTHREADS and GCCL_NSOCKS_PERTHREAD, else 2 and 1.
	NetThreads        int
	NetSocksPerThread int
	NetChunkSize      int // bytes per transfer of a long message, the same on every rank; 0 = DefaultNetChunkSize
	// NetChecksum, or GCCL_SOCKET_CHECKSUM=1, makes the socket provider
	// checksum every payload (a CRC32C in each frame header).
	NetChecksum bool

	// GPUBusID is the PCI bus id of the rank's GPU ("0000:3b:00.0", or
	// the CUDA driver's "00000000:3B:00.0"), "" for a host rank. Listen
	// then takes the provider's device nearest the GPU on the PCI tree and
	// runs the connections' progress goroutines on the GPU's CPUs.
	GPUBusID string
	// Sysfs is the sysfs root the topology is read from; "" = "/sys"
	// (tests use a fake tree).
	Sysfs string
	// IgnoreCPUAffinity, or GCCL_IGNORE_CPU_AFFINITY=1, places the
	// progress goroutines on the CPUs near the GPU (or device) even where
	// the process's affinity excludes them, instead of on those in both.
	IgnoreCPUAffinity bool
}

// DefaultShmDir is where rings live when Config.ShmDir is "".
const DefaultShmDir = "/dev/shm"

// DefaultSysfs is where the topology is read when Config.Sysfs is "".
const DefaultSysfs = "/sys"

// resolve fills the defaults of cfg from the environment.
func (cfg Config) resolve() Config {
	e := env.Get()
	if cfg.Timeout <= 0 {
		cfg.Timeout = e.Timeout
	}
	if cfg.HostHash == 0 {
		cfg.HostHash = topo.HostHash()
	}
	cfg.ShmDisable = cfg.ShmDisable || e.SHMDisable
	if cfg.ShmDir == "" {
		cfg.ShmDir = DefaultShmDir
	}
	if cfg.IfName == "" {
		cfg.IfName = e.SocketIfname
	}
	if cfg.NetName == "" {
		cfg.NetName = e.Net
	}
	cfg.IBDisable = cfg.IBDisable || e.IBDisable
	cfg.IgnoreCPUAffinity = cfg.IgnoreCPUAffinity || e.IgnoreCPUAffinity
	if cfg.Sysfs == "" {
		cfg.Sysfs = DefaultSysfs
	}
	if cfg.NetChunkSize == 0 {
		cfg.NetChunkSize = DefaultNetChunkSize
	}
	if cfg.ShmSlotSize == 0 && cfg.ShmSlots == 0 {
		cfg.ShmSlotSize = shmSlotSize(e.BuffSize)
	}
	return cfg
}

// shmSlotSize splits a ring of GCCL_BUFFSIZE bytes into shm.DefaultSlots
// slots, each within 4 KiB..shm.MaxSlotSize.
func shmSlotSize(buffSize int) int {
	return min(max(buffSize/shm.DefaultSlots, 4<<10), shm.MaxSlotSize)
}

func (cfg Config) shmOptions() shm.Options {
	return shm.Options{SlotSize: cfg.ShmSlotSize, Slots: cfg.ShmSlots, Timeout: cfg.Timeout}
}
