package env

// Var documents one environment variable.
type Var struct {
	Name    string // the GCCL_ name
	NCCL    string // the NCCL name also accepted, or ""
	Default string // the value used when the variable is unset
	Meaning string
	Field   string // the Settings field it sets, which the library reads
}

// Vars is every environment variable gccl reads, in the order of the docs.
// NCCL variables that gccl does not read on purpose: NCCL_NTHREADS (the
// kernels run fixed-size CTAs).
var Vars = []Var{
	{"GCCL_DEBUG", "NCCL_DEBUG", "WARN", "log level: NONE, VERSION (the version line once, at INFO, then warnings only), WARN, INFO or TRACE; INFO and TRACE print the version too", "Debug"},
	{"GCCL_DEBUG_SUBSYS", "NCCL_DEBUG_SUBSYS", "ALL", "comma-separated subsystems to log (INIT, BOOTSTRAP, COLL, P2P, NET, SHM, ENV, ...); a leading ^ excludes the listed ones", "DebugSubsys"},
	{"GCCL_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "", "interfaces to listen on: comma-separated name prefixes, =name for an exact name, ^ to exclude; empty = first non-loopback interface that is up, else loopback", "SocketIfname"},
	{"GCCL_P2P_DISABLE", "NCCL_P2P_DISABLE", "0", "1 disables the GPU peer-to-peer transport (CUDA IPC / cuMem)", "P2PDisable"},
	{"GCCL_SHM_DISABLE", "NCCL_SHM_DISABLE", "0", "1 disables the shared-memory transport", "SHMDisable"},
	{"GCCL_BUFFSIZE", "NCCL_BUFFSIZE", "2M", "bytes of each shared-memory ring of the host backend (one per peer on the same host, direction and channel, 8 slots; K, M suffixes); may differ between ranks", "BuffSize"},
	{"GCCL_ALGO", "NCCL_ALGO", "", "allowed algorithms, one vocabulary for both backends: ring and tree (host schedules), direct (every rank exchanges with every rank in one step: a host schedule, the GPU's one-shot and push kernels), zerocopy (mapped host buffers, registered GPU buffers), pipelined (the GPU's bulk-area kernels); comma-separated, a leading ^ excludes, NCCL's NVLS, CollNet and PAT names are ignored (empty = all, chosen by the cost model or the GPU's size limits); what no allowed algorithm can run takes the backend's general one (ring on the host, pipelined on GPUs); an unknown name warns and allows all; must be the same on every rank", "Algos"},
	{"GCCL_PROTO", "NCCL_PROTO", "", "allowed protocols: LL (flag-in-data: the GPU's one-shot kernels), Simple (every other kernel and every host schedule; it runs whatever LL cannot), LL128 (accepted, gccl has none); a leading ^ excludes (empty = all); LL without Simple sends every GPU collective that fits the direct area through a one-shot kernel (no push kernel), Simple without LL, none; the host runs Simple whatever the list; an unknown name warns and allows all; must be the same on every rank", "Protos"},
	{"GCCL_NVLS_ENABLE", "NCCL_NVLS_ENABLE", "0", "1 enables NVLink SHARP (multicast); off unless exactly 1", "NVLSEnable"},
	{"GCCL_LOCAL_REGISTER", "NCCL_LOCAL_REGISTER", "1", "1 lets registered user buffers skip the staging copy", "LocalRegister"},
	{"GCCL_GRAPH_REGISTER", "NCCL_GRAPH_REGISTER", "1", "1 registers user buffers captured in CUDA graphs", "GraphRegister"},
	{"GCCL_COMM_BLOCKING", "NCCL_COMM_BLOCKING", "1", "0 makes communicators nonblocking by default (Config.Blocking overrides)", "CommBlocking"},
	{"GCCL_CHECK_POINTERS", "NCCL_CHECK_POINTERS", "host 1, GPU 0", "1 checks that every buffer of every operation lies inside one live allocation of the communicator's device (a *gccl.Error InvalidArgument naming the buffer, the range and the allocation instead of a crash or a neighbour overwritten); on GPUs through cuMemGetAddressRange, once per allocation; 0 turns the check off", "CheckPointers"},
	{"GCCL_TIMEOUT", "", "5m", "deadline of every wait, as a Go duration with a unit (30s, 2m); Config.Timeout overrides", "Timeout"},
	{"GCCL_DEVICE", "", "auto", "backend: auto (GPU if a driver is present), host or cuda", "Device"},
	{"GCCL_HOSTID", "NCCL_HOSTID", "", "names this process's host (ranks with the same value share SHM and a local rank numbering in mpiboot); empty = host name and boot id", "HostID"},
	{"GCCL_FATBIN_DIR", "", "(empty)", "directory where kernels/build.sh just wrote gccl.fatbin and sources.sha256: load that instead of the embedded fatbin (its sources must match this binary's)", "FatbinDir"},
	{"GCCL_HOST_SPIN", "", "auto", "how long a host-backend wait for a peer (shared-memory rings, zero-copy barriers) busy-polls before it yields and sleeps on a futex, as a Go duration (0, 20us, 200us); auto = 50us on machines with 4 or more CPUs, else 0 (a few hundred polls, then yields and sleeps), and 0 once a communicator has more ranks on this host than it has CPUs, so that ranks sharing CPUs do not take them from each other", "HostSpin"},
	{"GCCL_PROXY_SPIN", "", "1ms", "how long a GPU communicator's network proxy (the goroutine that moves FIFO slots between hosts) polls hot after a launch is enqueued or a transfer progressed, as a Go duration (0, 200us, 2ms); after it the proxy polls in sleeps growing to 100us, which is how it finds the work of CUDA graph replays; 0 = never spin while nothing is in flight", "ProxySpin"},
	{"GCCL_NET", "NCCL_NET", "auto", "network provider between hosts: socket (TCP), ucx (UCX: InfiniBand, RoCE, TCP), or auto (ucx when it reports an RDMA device and GCCL_IB_DISABLE is not set, else socket); case-insensitive; Config.NetName overrides; ranks that chose different providers fail to connect with an error naming both", "Net"},
	{"GCCL_IB_DISABLE", "NCCL_IB_DISABLE", "0", "1 keeps gccl off InfiniBand and RoCE: GCCL_NET=auto takes socket, and the ucx provider lists and uses only its TCP devices (UCX_NET_DEVICES names one of them)", "IBDisable"},
	{"GCCL_IGNORE_CPU_AFFINITY", "NCCL_IGNORE_CPU_AFFINITY", "0", "placement of a rank's network progress goroutines (socket helpers, UCX progress), which run on the CPUs near its GPU (a host rank: near its network device), read from sysfs: 0 = only those the process's affinity (mpirun --bind-to, taskset) also allows, affinity left alone when none is; 1 = the CPUs near the GPU whatever the process's affinity, as in NCCL", "IgnoreCPUAffinity"},
	{"GCCL_SOCKET_NTHREADS", "NCCL_SOCKET_NTHREADS", "0", "socket provider: helper goroutines per connection, which move the pieces of transfers over 64 KiB (0 = 2); data sockets per connection = GCCL_SOCKET_NTHREADS × GCCL_NSOCKS_PERTHREAD, at most 63, plus a control socket", "SocketNThreads"},
	{"GCCL_NSOCKS_PERTHREAD", "NCCL_NSOCKS_PERTHREAD", "0", "socket provider: data sockets each helper goroutine drives (0 = 1); see GCCL_SOCKET_NTHREADS", "NSocksPerThread"},
	{"GCCL_SOCKET_CHECKSUM", "", "0", "1 makes the socket provider put a CRC32C of every payload in its frame header and check it on receipt: a payload corrupted past TCP's own 16-bit checksum is then ErrSystem, not data, at the cost of computing it on both sides, on the critical path (3 us or more per 64 KiB each); 0 = payloads rely on TCP's checksum, as in NCCL and MPI (frame headers always carry a CRC32C: a corrupted or desynchronised stream is an error either way); a rank with 1 refuses payloads sent without one (ErrInvalidUsage): set it the same on every rank", "SocketChecksum"},
	{"GCCL_CHUNKSIZE", "NCCL_CHUNKSIZE", "0", "bytes per pipeline chunk of the host backend's step schedules (0 = 512K); must be the same on every rank", "ChunkSize"},
	{"GCCL_MAX_NCHANNELS", "NCCL_MAX_NCHANNELS", "0", "most channels (CTAs) of a GPU collective kernel, 1 to 64 (0 = 32); must be the same on every rank", "MaxNChannels"},
	{"GCCL_GPU_BUFFSIZE", "", "64M", "bytes of each rank's GPU staging area (1M to 1G; K, M, G suffixes); must be the same on every rank", "GPUBuffSize"},
	{"GCCL_NET_BUFFSIZE", "", "4M", "bytes of each FIFO of a GPU communicator whose ranks span hosts (one per ring channel and direction, one per point-to-point peer and direction; 8 slots, so a slot is an eighth: a multiple of 32K, at most 1G; K, M, G suffixes), as NCCL_BUFFSIZE per network connection; must be the same on every rank", "NetBuffSize"},
	{"GCCL_NET_NCHANNELS", "", "4", "most channels of a communicator whose ranks span hosts, 1 to 16, each with connections of its own to the ranks it talks to; an operation uses as many as its size needs; GPU: ring connections to the next rank and blocks of its ring kernels, as many as the ring cost model gives the operation's size (one for small ones, all for large ones: docs/gpunet.md); host backend: parts of a collective whose step schedules run at once, one per 64 KiB per rank of data (point-to-point uses one); must be the same on every rank", "NetNChannels"},
	{"GCCL_GPU_LL_MAX", "", "128K", "largest GPU collective (bytes per rank) that takes an LL one-shot kernel (K, M suffixes); must be the same on every rank", "GPULLMax"},
	{"GCCL_GPU_PUSH_MAX", "", "1M", "largest GPU all-reduce that takes the push kernel (one barrier, every rank reduces every copy); must be the same on every rank", "GPUPushMax"},
	{"GCCL_GPU_CHECK_DESCRIPTORS", "", "0", "1 makes the GPU kernels for small messages (the one-shot LL kernels, the push all-reduce) check that the ranks run the same operation, as the pipelined and zero-copy kernels always do at their first barrier: a one-block check kernel before each (about one kernel launch more per operation); a mismatch is ErrInvalidUsage instead of wrong data or a timeout; must be the same on every rank", "GPUCheckDescriptors"},
}
