package gpu

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/cuda/cudatest"
	"github.com/gccl/gccl/internal/reduce"
	"github.com/gccl/gccl/kernels"
	"github.com/gccl/gccl/mpiboot"
	"github.com/stretchr/testify/require"
)

var (
	opTimeout = flag.Duration("gccl.timeout", 2*time.Minute, "deadline of every gccl and MPI wait")
	fatbinDir = flag.String("gccl.fatbin-dir", "", "load the fatbin kernels/build.sh wrote here instead of the embedded one")
	full      = flag.Bool("gccl.full", false, "run the 64 MiB count for every type and operator")
	largeRun  = flag.Bool("gccl.large", true, "run the 64 MiB count (for a subset of types and operators unless -gccl.full)")
	oneDevice = flag.Int("gccl.device", -1, "put every rank on this GPU (>= 0: several processes share one GPU, for machines with one)")
)

func TestMain(m *testing.M) {
	flag.Parse()
	if *fatbinDir != "" {
		if err := kernels.UseBuilt(*fatbinDir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if err := mpiboot.Init(); err != nil {
		fmt.Fprintln(os.Stderr, "mpiboot.Init:", err)
		os.Exit(1)
	}
	if err := mpiboot.SetTimeout(*opTimeout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := mpiboot.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "mpiboot.Finalize:", err)
		code = 1
	}
	os.Exit(code)
}

// poison is the byte every output holds before an operation.
const poison = 0xA5

func config() *comm.Config {
	c := &comm.Config{Timeout: *opTimeout, Name: "gputest", Backend: device.CUDA}
	if *oneDevice >= 0 {
		c.Device, c.DeviceSet = *oneDevice, true
	}
	return c
}

// requireLocalGPUs skips (or fails with GCCL_REQUIRE_GPU=1) unless this
// process has perProcess GPUs of its own.
func requireLocalGPUs(t *testing.T, perProcess int) {
	t.Helper()
	if *oneDevice >= 0 {
		cudatest.RequireGPU(t, *oneDevice+1)
		if perProcess > 1 {
			t.Skip("-gccl.device puts every rank on one GPU")
		}
		return
	}
	cudatest.RequireGPU(t, perProcess*mpiboot.LocalSize())
}

// world makes a GPU communicator over every process, closed after the test.
func world(t *testing.T) *comm.Comm {
	t.Helper()
	requireLocalGPUs(t, 1)
	c, err := mpiboot.NewComm(config())
	require.NoError(t, err)
	require.Equal(t, device.CUDA, c.Device().Kind())
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// agree reports this process's failures and fails every process when any
// process failed, so they stop together.
func agree(t *testing.T, failures []error) bool {
	t.Helper()
	for i, err := range failures {
		if i == 10 {
			t.Errorf("... and %d more", len(failures)-10)
			break
		}
		t.Error(err)
	}
	flag := []byte{0}
	if len(failures) > 0 {
		flag[0] = 1
	}
	all, err := mpiboot.Allgather(flag)
	require.NoError(t, err)
	for _, f := range all {
		if f != 0 {
			t.Errorf("a process failed (see its output)")
			return false
		}
	}
	return true
}

// input is rank's random input of a case, recomputable by every process.
func input(seed uint64, rank int, t gccl.DataType, count int) []byte {
	b := make([]byte, count*t.Size())
	reduce.Fill(b, t, rand.New(rand.NewPCG(seed, uint64(rank)+1)))
	return b
}

func inputs(seed uint64, nranks int, t gccl.DataType, count int) [][]byte {
	in := make([][]byte, nranks)
	for r := range in {
		in[r] = input(seed, r, t, count)
	}
	return in
}

// buffers owns device allocations of one device, freed after the test.
type buffers struct {
	t *testing.T
	d device.Device
}

// alloc returns n bytes of device memory (at least one) holding content
// followed by poison.
func (b *buffers) alloc(n int, content []byte) uintptr {
	b.t.Helper()
	p, err := b.d.Alloc(max(n, 1))
	require.NoError(b.t, err)
	b.t.Cleanup(func() { _ = b.d.Free(p) })
	host := make([]byte, max(n, 1))
	copy(host[copy(host, content):], poisonBytes(len(host)))
	require.NoError(b.t, b.d.CopyIn(p, host))
	return p
}

func poisonBytes(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = poison
	}
	return p
}

func (b *buffers) read(p uintptr, n int) []byte {
	b.t.Helper()
	out := make([]byte, n)
	if n > 0 {
		require.NoError(b.t, b.d.CopyOut(out, p))
	}
	return out
}

func (b *buffers) stream() gccl.Stream {
	b.t.Helper()
	s, err := b.d.NewStream()
	require.NoError(b.t, err)
	b.t.Cleanup(func() { _ = b.d.DestroyStream(s) })
	return s
}
