package env

// Var documents one environment variable.
type Var struct {
	Name    string // the GCCL_ name
	NCCL    string // the NCCL name also accepted, or ""
	Default string // the value used when the variable is unset
	Meaning string
}

// Vars is every environment variable gccl reads, in the order of the docs.
var Vars = []Var{
	{"GCCL_DEBUG", "NCCL_DEBUG", "WARN", "log level: VERSION (print the version once), WARN, INFO or TRACE"},
	{"GCCL_DEBUG_SUBSYS", "NCCL_DEBUG_SUBSYS", "ALL", "comma-separated subsystems to log (INIT, BOOTSTRAP, COLL, P2P, NET, SHM, ENV, ...); a leading ^ excludes the listed ones"},
	{"GCCL_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "", "interfaces to listen on: comma-separated name prefixes, =name for an exact name, ^ to exclude; empty = first non-loopback interface that is up, else loopback"},
	{"GCCL_P2P_DISABLE", "NCCL_P2P_DISABLE", "0", "1 disables the GPU peer-to-peer transport (CUDA IPC / cuMem)"},
	{"GCCL_SHM_DISABLE", "NCCL_SHM_DISABLE", "0", "1 disables the shared-memory transport"},
	{"GCCL_IB_DISABLE", "NCCL_IB_DISABLE", "0", "1 disables the InfiniBand verbs transport"},
	{"GCCL_BUFFSIZE", "NCCL_BUFFSIZE", "4194304", "bytes of staging buffer per channel and peer"},
	{"GCCL_ALGO", "NCCL_ALGO", "", "allowed algorithms, e.g. Ring,Tree (empty = chosen by the cost model)"},
	{"GCCL_PROTO", "NCCL_PROTO", "", "allowed protocols, e.g. LL,LL128,Simple (empty = chosen by the cost model); on GPUs, LL without Simple sends every collective that fits the LL area through a one-shot kernel, Simple without LL none; must be the same on every rank"},
	{"GCCL_NVLS_ENABLE", "NCCL_NVLS_ENABLE", "0", "1 enables NVLink SHARP (multicast); off unless exactly 1"},
	{"GCCL_LOCAL_REGISTER", "NCCL_LOCAL_REGISTER", "1", "1 lets registered user buffers skip the staging copy"},
	{"GCCL_GRAPH_REGISTER", "NCCL_GRAPH_REGISTER", "1", "1 registers user buffers captured in CUDA graphs"},
	{"GCCL_COMM_BLOCKING", "NCCL_COMM_BLOCKING", "1", "0 makes communicators nonblocking by default (Config.Blocking overrides)"},
	{"GCCL_TIMEOUT", "", "5m", "deadline of every wait, as a Go duration (30s, 2m); Config.Timeout overrides"},
	{"GCCL_DEVICE", "", "auto", "backend: auto (GPU if a driver is present), host or cuda"},
	{"GCCL_FATBIN_DIR", "", "(empty)", "directory where kernels/build.sh just wrote gccl.fatbin and sources.sha256: load that instead of the embedded fatbin (its sources must match this binary's)"},
	{"GCCL_NTHREADS", "NCCL_NTHREADS", "0", "threads per CTA on the GPU (0 = chosen per operation)"},
	{"GCCL_SOCKET_NTHREADS", "NCCL_SOCKET_NTHREADS", "0", "helper goroutines per socket connection (0 = automatic)"},
	{"GCCL_NSOCKS_PERTHREAD", "NCCL_NSOCKS_PERTHREAD", "0", "sockets per helper goroutine (0 = automatic)"},
	{"GCCL_CHUNKSIZE", "NCCL_CHUNKSIZE", "0", "bytes per pipeline chunk (0 = chosen by the cost model)"},
	{"GCCL_MAX_NCHANNELS", "NCCL_MAX_NCHANNELS", "0", "most channels (CTAs) of a GPU collective kernel, 1 to 64 (0 = 32); must be the same on every rank"},
	{"GCCL_GPU_BUFFSIZE", "", "64M", "bytes of each rank's GPU staging area (1M to 1G; K, M, G suffixes); must be the same on every rank"},
	{"GCCL_GPU_LL_MAX", "", "128K", "largest GPU collective (bytes per rank) that takes an LL one-shot kernel (K, M suffixes); must be the same on every rank"},
	{"GCCL_GPU_PUSH_MAX", "", "1M", "largest GPU all-reduce that takes the push kernel (one barrier, every rank reduces every copy); must be the same on every rank"},
}
