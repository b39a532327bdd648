package env

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Settings holds every environment variable gccl reads, parsed.
type Settings struct {
	Debug           slog.Level // from GCCL_DEBUG; LevelNone when logging is off
	DebugVersion    bool       // GCCL_DEBUG=VERSION
	DebugSubsys     []string   // upper-case subsystem names; empty = all
	DebugSubsysNot  bool       // the list excludes (leading ^)
	SocketIfname    string
	P2PDisable      bool
	SHMDisable      bool
	IBDisable       bool
	BuffSize        int
	Algo            string
	Proto           string
	NVLSEnable      bool // true only when explicitly 1
	LocalRegister   bool
	GraphRegister   bool
	CommBlocking    bool
	Timeout         time.Duration
	Device          string // auto, host or cuda
	NThreads        int
	SocketNThreads  int
	NSocksPerThread int
	ChunkSize       int
	MaxNChannels    int    // GPU kernels' grid cap, 0 = built-in default
	GPUBuffSize     int    // bytes of a rank's GPU staging area, 0 = built-in default
	GPULLMax        int    // largest GPU collective (bytes per rank) on the LL one-shots, 0 = built-in default
	GPUPushMax      int    // largest GPU all-reduce (bytes) on the push kernel, 0 = built-in default
	FatbinDir       string // a kernels/build.sh output to load instead of the embedded fatbin

	// Warnings lists the variables whose values could not be parsed; their
	// defaults were used instead.
	Warnings []string
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
	once.Do(func() { set(load(os.LookupEnv)) })
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
	return s
}

func set(s *Settings) {
	mu.Lock()
	current = s
	mu.Unlock()
}

// loader reads variables through lookup, recording parse failures. An
// empty variable counts as unset.
type loader struct {
	lookup func(string) (string, bool)
	warns  []string
}

func (l *loader) raw(name string) (string, bool) {
	if v, ok := l.lookup(name); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v), true
	}
	for _, v := range Vars {
		if v.Name == name && v.NCCL != "" {
			if s, ok := l.lookup(v.NCCL); ok && strings.TrimSpace(s) != "" {
				return strings.TrimSpace(s), true
			}
		}
	}
	return "", false
}

func (l *loader) str(name, def string) string {
	if v, ok := l.raw(name); ok && v != "" {
		return v
	}
	return def
}

func (l *loader) warn(name, val, want string) {
	l.warns = append(l.warns, fmt.Sprintf("%s=%q is not %s; using the default", name, val, want))
}

func (l *loader) boolean(name string, def bool) bool {
	v, ok := l.raw(name)
	if !ok || v == "" {
		return def
	}
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true
	case "0", "false", "no", "off":
		return false
	}
	l.warn(name, v, "a boolean (0 or 1)")
	return def
}

func (l *loader) integer(name string, def int) int {
	v, ok := l.raw(name)
	if !ok || v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		l.warn(name, v, "a non-negative integer")
		return def
	}
	return n
}

// size reads a byte count: a non-negative integer, optionally followed by
// K, M or G (binary multiples; "KiB", "MB" and lower case work too).
func (l *loader) size(name string, def int) int {
	v, ok := l.raw(name)
	if !ok || v == "" {
		return def
	}
	n, ok := parseSize(v)
	if !ok {
		l.warn(name, v, "a byte count such as 65536, 64K or 16M")
		return def
	}
	return n
}

// parseSize parses what size accepts.
func parseSize(v string) (int, bool) {
	s := strings.ToUpper(strings.TrimSpace(v))
	s = strings.TrimSuffix(strings.TrimSuffix(s, "B"), "I")
	shift := 0
	if s != "" {
		switch s[len(s)-1] {
		case 'K':
			shift = 10
		case 'M':
			shift = 20
		case 'G':
			shift = 30
		}
	}
	if shift > 0 {
		s = s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > (1<<40)>>shift {
		return 0, false
	}
	return n << shift, true
}

func (l *loader) duration(name string, def time.Duration) time.Duration {
	v, ok := l.raw(name)
	if !ok || v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		l.warn(name, v, "a positive duration such as 30s or 5m")
		return def
	}
	return d
}

func load(lookup func(string) (string, bool)) *Settings {
	l := &loader{lookup: lookup}
	s := &Settings{
		SocketIfname:    l.str("GCCL_SOCKET_IFNAME", ""),
		P2PDisable:      l.boolean("GCCL_P2P_DISABLE", false),
		SHMDisable:      l.boolean("GCCL_SHM_DISABLE", false),
		IBDisable:       l.boolean("GCCL_IB_DISABLE", false),
		BuffSize:        l.integer("GCCL_BUFFSIZE", 4<<20),
		Algo:            l.str("GCCL_ALGO", ""),
		Proto:           l.str("GCCL_PROTO", ""),
		NVLSEnable:      l.str("GCCL_NVLS_ENABLE", "0") == "1",
		LocalRegister:   l.boolean("GCCL_LOCAL_REGISTER", true),
		GraphRegister:   l.boolean("GCCL_GRAPH_REGISTER", true),
		CommBlocking:    l.boolean("GCCL_COMM_BLOCKING", true),
		Timeout:         l.duration("GCCL_TIMEOUT", 5*time.Minute),
		NThreads:        l.integer("GCCL_NTHREADS", 0),
		SocketNThreads:  l.integer("GCCL_SOCKET_NTHREADS", 0),
		NSocksPerThread: l.integer("GCCL_NSOCKS_PERTHREAD", 0),
		ChunkSize:       l.integer("GCCL_CHUNKSIZE", 0),
		MaxNChannels:    l.integer("GCCL_MAX_NCHANNELS", 0),
		GPUBuffSize:     l.size("GCCL_GPU_BUFFSIZE", 0),
		GPULLMax:        l.size("GCCL_GPU_LL_MAX", 0),
		GPUPushMax:      l.size("GCCL_GPU_PUSH_MAX", 0),
	}
	s.FatbinDir = l.str("GCCL_FATBIN_DIR", "")
	s.Device = strings.ToLower(l.str("GCCL_DEVICE", "auto"))
	switch s.Device {
	case "auto", "host", "cuda":
	default:
		l.warn("GCCL_DEVICE", s.Device, "auto, host or cuda")
		s.Device = "auto"
	}
	s.Debug, s.DebugVersion = l.level()
	s.DebugSubsys, s.DebugSubsysNot = parseSubsys(l.str("GCCL_DEBUG_SUBSYS", ""))
	s.Warnings = l.warns
	return s
}

func (l *loader) level() (slog.Level, bool) {
	v := l.str("GCCL_DEBUG", "WARN")
	switch strings.ToUpper(v) {
	case "NONE":
		return LevelNone, false
	case "VERSION":
		return slog.LevelWarn, true
	case "WARN":
		return slog.LevelWarn, false
	case "INFO":
		return slog.LevelInfo, false
	case "TRACE":
		return LevelTrace, false
	}
	l.warn("GCCL_DEBUG", v, "one of NONE, VERSION, WARN, INFO, TRACE")
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
