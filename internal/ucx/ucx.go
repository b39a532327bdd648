package ucx

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"

	"github.com/gccl/gccl"
)

// Library is the UCP library's name.
const Library = "libucp.so.0"

var loadOnce = sync.OnceValue(func() error { return loadFrom(Library) })

// loadFrom opens the library called name (tests name a missing one).
func loadFrom(name string) error {
	if msg, ok := cLoad(name); !ok {
		return &gccl.Error{Code: gccl.SystemError, Arg: name,
			Msg: "cannot use UCX, " + name + " was not found or is unusable (" + msg +
				"): install UCX (libucx0 on Debian/Ubuntu, ucx on RHEL) or use GCCL_NET=socket",
			Err: ErrNoLibrary}
	}
	return nil
}

// Load opens libucp.so.0 once; its error wraps ErrNoLibrary and says what
// to do.
func Load() error { return loadOnce() }

// Version is the loaded library's version, "1.13.1".
func Version() string {
	if Load() != nil {
		return ""
	}
	a, b, c := cVersion()
	return fmt.Sprintf("%d.%d.%d", a, b, c)
}

// Context is a UCP context (ucp_context_h): the transports and devices
// UCX found, and memory registration. Its workers may run in different
// threads at once (mt_workers_shared).
type Context struct {
	h     uintptr
	types uint64
}

// Setting is one ucp_config_modify applied over the environment's UCX_*
// configuration: Name without the UCX_ prefix ("TLS", "NET_DEVICES").
type Setting struct{ Name, Value string }

// UnlessSet is s, or nothing where the environment sets UCX_<Name> itself
// or any of UCX_<also> (a transport's name for its setting, settings UCX
// checks against it): a default of gccl's that the user's UCX
// configuration overrides.
func (s Setting) UnlessSet(also ...string) []Setting {
	for _, name := range append([]string{s.Name}, also...) {
		if _, set := os.LookupEnv("UCX_" + strings.TrimPrefix(name, "?")); set {
			return nil
		}
	}
	return []Setting{s}
}

// wireUpAtCreate is applied to every context before the caller's
// settings: UCX_RESOLVE_REMOTE_EP_ID=y (UCX 1.13 on; older ones do not
// know it, and it is left out there).
//
// Without it, an endpoint over transports that connect to the peer's
// interface (TCP, shared memory) exchanges its wire-up request and reply
// only when a protocol first needs the peer's endpoint id (the first
// rendezvous send, or a synchronous one), in the middle of the
// connection's life. The reply is sent by an endpoint UCX makes on the
// peer's worker, queued on a TCP connection back to this worker that is
// still being established; if this worker is destroyed before that
// connection completes, the peer's connect fails, its queue is purged,
// and UCX 1.12 and 1.13 builds with assertions (Debian's among them)
// abort the process on the purged reply (openucx/ucx#7648, "got REP
// message"): a worker flush does not wait for it (it only looks at the
// interfaces' outstanding sends), nor does an endpoint flush before the
// request was sent. With it, ucp_ep_create sends the request at once and
// the endpoint's lanes wait for the reply, so a flush of the new endpoint
// (Endpoint.Flush) returns only once the reply has arrived: the wire-up is
// complete in both directions and no wire-up message is in flight later.
var wireUpAtCreate = Setting{"?RESOLVE_REMOTE_EP_ID", "y"}

// noKeepalive is applied to every context before the caller's settings:
// UCX_KEEPALIVE_INTERVAL=inf. UCP's keepalive sends an active message
// (EP_CHECK) from every endpoint that has its peer's id, which with
// wireUpAtCreate is every endpoint, the first one at once; one arriving
// after the peer closed its endpoint makes the peer's worker open a new
// TCP connection back to send EP_REMOVED, and if this worker is destroyed
// before it is established, UCX 1.13's TCP transport retries, fails and
// aborts an assertion build ("tcp_ep.c:478 Assertion
// `!(ep->flags & UCT_TCP_EP_FLAG_CTX_TYPE_TX)'"). gccl does not need it:
// the transports' own errors and the users' side channels (the network
// provider's side socket) tell a dead peer.
var noKeepalive = Setting{"?KEEPALIVE_INTERVAL", "inf"}

// NewContext reads UCX's configuration from the environment, applies
// settings, and creates a context with the tag, RMA and wakeup features.
// The endpoints of its workers do their wire-up when created (see
// Endpoint.Flush).
func NewContext(settings ...Setting) (*Context, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	mods := make([]string, 0, 2*len(settings)+4)
	for _, s := range append([]Setting{wireUpAtCreate, noKeepalive}, settings...) {
		mods = append(mods, s.Name, s.Value)
	}
	h, s, msg := cInit(mods)
	if s != OK {
		return nil, gccl.Errorf(gccl.SystemError, "ucp_init", "%s: %w", msg, s)
	}
	c := &Context{h: h}
	if t, s := cMemoryTypes(h); s == OK {
		c.types = t
	}
	return c, nil
}

// Close releases the context (ucp_cleanup); its workers must be closed.
func (c *Context) Close() {
	if c != nil && c.h != 0 {
		cCleanup(c.h)
		c.h = 0
	}
}

// CUDA reports whether the context can send from and receive into CUDA
// memory (UCS_MEMORY_TYPE_CUDA among its memory types).
func (c *Context) CUDA() bool { return c.types&(1<<memoryTypeCUDA) != 0 }

const memoryTypeCUDA = 1

// Resource is one transport on one device, as ucp_context_print_info
// lists them: "tcp" on "eth0", "rc_mlx5" on "mlx5_0:1", "posix" on
// "memory".
type Resource struct{ Transport, Device string }

// Resources lists the context's transports and devices.
func (c *Context) Resources() []Resource { return ParseResources(cContextInfo(c.h)) }

// ParseResources reads the resource lines of ucp_context_print_info's
// output ("#  resource 1  :  md 1  dev 1  flags -- tcp/lo").
func ParseResources(info string) []Resource {
	var out []Resource
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "#"))
		if !strings.HasPrefix(line, "resource ") {
			continue
		}
		f := strings.Fields(line)
		tl, dev, ok := strings.Cut(f[len(f)-1], "/")
		if ok && tl != "" && dev != "" {
			out = append(out, Resource{Transport: tl, Device: dev})
		}
	}
	return out
}

// Mem is a registration (ucp_mem_h).
type Mem struct {
	h    uintptr
	Ptr  unsafe.Pointer
	Len  int
	CUDA bool
}

// Map registers [p, p+n) (ucp_mem_map); cuda says p is a CUDA device
// address. Go memory must stay pinned while it is mapped.
func (c *Context) Map(p unsafe.Pointer, n int, cuda bool) (*Mem, error) {
	if n <= 0 || p == nil {
		return nil, gccl.Errorf(gccl.InvalidArgument, "ucp_mem_map", "empty region (%d bytes at %p)", n, p)
	}
	h, s := cMemMap(c.h, p, n, cuda)
	if err := check("ucp_mem_map", s); err != nil {
		return nil, err
	}
	return &Mem{h: h, Ptr: p, Len: n, CUDA: cuda}, nil
}

// Unmap releases m (ucp_mem_unmap).
func (c *Context) Unmap(m *Mem) error {
	if m == nil || m.h == 0 {
		return nil
	}
	s := cMemUnmap(c.h, m.h)
	m.h = 0
	return check("ucp_mem_unmap", s)
}

func (m *Mem) handle() uintptr {
	if m == nil {
		return 0
	}
	return m.h
}
