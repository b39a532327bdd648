package env

import (
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gccl/gccl/internal/algo"
)

// Settings holds every environment variable gccl reads, parsed.
type Settings struct {
	Debug          slog.Level // from GCCL_DEBUG; LevelNone when logging is off
	DebugVersion   bool       // GCCL_DEBUG=VERSION
	DebugSubsys    []string   // upper-case subsystem names; empty = all
	DebugSubsysNot bool       // the list excludes (leading ^)
	SocketIfname   string
	P2PDisable     bool
	SHMDisable     bool
	BuffSize       int // bytes of each host shared-memory ring
	// Algos and Protos are GCCL_ALGO and GCCL_PROTO parsed (every
	// algorithm / protocol when unset or not parsable), the one meaning
	// both backends give them (package algo).
	Algos           algo.Allowed
	Protos          algo.Protocols
	NVLSEnable      bool // true only when explicitly 1
	LocalRegister   bool
	GraphRegister   bool
	CommBlocking    bool
	Timeout         time.Duration
	Device          string // auto, host or cuda
	HostID          string // GCCL_HOSTID: replaces the host identity; "" = host name and boot id
	SocketNThreads  int
	NSocksPerThread int
	SocketChecksum  bool   // GCCL_SOCKET_CHECKSUM: the socket provider checksums payloads
	Net             string // GCCL_NET: the network provider, lower case (auto, socket, ucx)
	IBDisable       bool   // GCCL_IB_DISABLE: no RDMA (auto takes socket; ucx keeps to TCP)
	ChunkSize       int
	MaxNChannels    int // GPU kernels' grid cap, 0 = built-in default
	GPUBuffSize     int // bytes of a rank's GPU staging area, 0 = built-in default
	GPULLMax        int // largest GPU collective (bytes per rank) on the LL one-shots, 0 = built-in default
	GPUPushMax      int // largest GPU all-reduce (bytes) on the push kernel, 0 = built-in default
	// NetBuffSize is GCCL_NET_BUFFSIZE: bytes of the slots of each FIFO
	// of a GPU communicator across hosts (8 slots), 0 = built-in default.
	NetBuffSize int
	// NetNChannels is GCCL_NET_NCHANNELS: the most channels of a
	// communicator across hosts (GPU: ring connections and kernel blocks;
	// host backend: parts of a collective run at once), 0 = built-in
	// default.
	NetNChannels int
	// HostSpin is GCCL_HOST_SPIN: how long a host wait for a peer polls
	// before it sleeps; -1 = auto (package futex decides).
	HostSpin time.Duration
	// ProxySpin is GCCL_PROXY_SPIN: how long the network proxy of a GPU
	// communicator polls hot after a launch or a transfer's progress.
	ProxySpin time.Duration
	// GPUCheckDescriptors is GCCL_GPU_CHECK_DESCRIPTORS: whether the GPU
	// kernels that compare no descriptor of their own (one-shot, push) get
	// a check kernel before them that does.
	GPUCheckDescriptors bool
	FatbinDir           string // a kernels/build.sh output to load instead of the embedded fatbin
	// CheckPointers is GCCL_CHECK_POINTERS: whether every operation's
	// buffers are checked against the device's live allocations; nil when
	// unset, each backend then using its default (package engine).
	CheckPointers *bool
	// IgnoreCPUAffinity is GCCL_IGNORE_CPU_AFFINITY: network progress runs
	// on the CPUs near the rank's GPU (or NIC) even outside the process's
	// affinity, as NCCL_IGNORE_CPU_AFFINITY does.
	IgnoreCPUAffinity bool

	// Warnings lists the variables whose values could not be parsed and
	// what was used instead; the first Get and every Reload log each one as
	// a WARN of subsystem ENV.
	Warnings []Warning
}

// Log levels beyond slog's own.
const (
	LevelTrace = slog.LevelDebug - 4 // GCCL_DEBUG=TRACE
	LevelNone  = slog.LevelError + 8 // GCCL_DEBUG=NONE: nothing is logged
)

var (
	once    sync.Once
	mu      sync.Mutex
	current *Settings
)

// Get returns the settings, reading the environment on the first call.
func Get() *Settings {
	once.Do(func() {
		s := load(os.LookupEnv)
		set(s)
		logWarnings(s)
	})
	mu.Lock()
	defer mu.Unlock()
	return current
}

// Reload re-reads the environment and returns the new settings. Tests use
// it after t.Setenv; the library itself never calls it after the first Get.
func Reload() *Settings {
	s := load(os.LookupEnv)
	once.Do(func() {}) // a later Get must not overwrite s
	set(s)
	resetLoggers()
	logWarnings(s)
	return s
}

func set(s *Settings) {
	mu.Lock()
	current = s
	mu.Unlock()
}

func load(lookup func(string) (string, bool)) *Settings {
	l := &loader{lookup: lookup}
	s := &Settings{
		SocketIfname:        l.str("GCCL_SOCKET_IFNAME", ""),
		P2PDisable:          l.boolean("GCCL_P2P_DISABLE", false),
		SHMDisable:          l.boolean("GCCL_SHM_DISABLE", false),
		BuffSize:            l.size("GCCL_BUFFSIZE", DefaultBuffSize),
		NVLSEnable:          l.nvls("GCCL_NVLS_ENABLE"),
		LocalRegister:       l.boolean("GCCL_LOCAL_REGISTER", true),
		GraphRegister:       l.boolean("GCCL_GRAPH_REGISTER", true),
		CommBlocking:        l.boolean("GCCL_COMM_BLOCKING", true),
		Timeout:             l.duration("GCCL_TIMEOUT", 5*time.Minute),
		HostID:              l.str("GCCL_HOSTID", ""),
		SocketNThreads:      l.integer("GCCL_SOCKET_NTHREADS", 0),
		NSocksPerThread:     l.integer("GCCL_NSOCKS_PERTHREAD", 0),
		SocketChecksum:      l.boolean("GCCL_SOCKET_CHECKSUM", false),
		Net:                 strings.ToLower(strings.TrimSpace(l.str("GCCL_NET", "auto"))),
		IBDisable:           l.boolean("GCCL_IB_DISABLE", false),
		IgnoreCPUAffinity:   l.boolean("GCCL_IGNORE_CPU_AFFINITY", false),
		ChunkSize:           l.integer("GCCL_CHUNKSIZE", 0),
		MaxNChannels:        l.integer("GCCL_MAX_NCHANNELS", 0),
		GPUBuffSize:         l.size("GCCL_GPU_BUFFSIZE", 0),
		GPULLMax:            l.size("GCCL_GPU_LL_MAX", 0),
		GPUPushMax:          l.size("GCCL_GPU_PUSH_MAX", 0),
		NetBuffSize:         l.size("GCCL_NET_BUFFSIZE", 0),
		NetNChannels:        l.integer("GCCL_NET_NCHANNELS", 0),
		GPUCheckDescriptors: l.boolean("GCCL_GPU_CHECK_DESCRIPTORS", false),
		HostSpin:            l.spin("GCCL_HOST_SPIN"),
		ProxySpin:           l.nonNegDuration("GCCL_PROXY_SPIN", DefaultProxySpin),
		FatbinDir:           l.str("GCCL_FATBIN_DIR", ""),
		Device:              l.choice("GCCL_DEVICE", "auto", "auto", "host", "cuda"),
	}
	s.CheckPointers = l.optBoolean("GCCL_CHECK_POINTERS")
	s.Algos = l.algos("GCCL_ALGO")
	s.Protos = l.protos("GCCL_PROTO")
	s.Debug, s.DebugVersion = l.level()
	s.DebugSubsys, s.DebugSubsysNot = parseSubsys(l.str("GCCL_DEBUG_SUBSYS", ""))
	s.Warnings = l.warns
	return s
}

// DefaultProxySpin is GCCL_PROXY_SPIN's default.
const DefaultProxySpin = time.Millisecond

// DefaultBuffSize is GCCL_BUFFSIZE's default: 8 slots of 256 KiB.
const DefaultBuffSize = 2 << 20

func (l *loader) level() (slog.Level, bool) {
	switch v := l.choice("GCCL_DEBUG", "WARN", "WARN", "NONE", "VERSION", "INFO", "TRACE"); v {
	case "NONE":
		return LevelNone, false
	case "VERSION":
		return slog.LevelWarn, true
	case "INFO":
		return slog.LevelInfo, false
	case "TRACE":
		return LevelTrace, false
	}
	return slog.LevelWarn, false
}

func parseSubsys(v string) ([]string, bool) {
	not := strings.HasPrefix(v, "^")
	v = strings.TrimPrefix(v, "^")
	var out []string
	for _, f := range strings.Split(v, ",") {
		f = strings.ToUpper(strings.TrimSpace(f))
		if f == "ALL" && !not {
			return nil, false
		}
		if f != "" {
			out = append(out, f)
		}
	}
	return out, not
}

// SubsysEnabled reports whether logging is on for the subsystem.
func (s *Settings) SubsysEnabled(subsys string) bool {
	if len(s.DebugSubsys) == 0 {
		return true
	}
	subsys = strings.ToUpper(subsys)
	listed := false
	for _, n := range s.DebugSubsys {
		if n == subsys || n == "ALL" {
			listed = true
			break
		}
	}
	return listed != s.DebugSubsysNot
}
