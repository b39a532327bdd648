package kernels

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFatbinFresh fails when the committed fatbin was built from other
// sources than the ones in this directory (rerun build.sh).
func TestFatbinFresh(t *testing.T) {
	if !Built() {
		if os.Getenv("GCCL_REQUIRE_FATBIN") == "1" {
			t.Fatal("kernels/fatbin/gccl.fatbin is missing; run kernels/build.sh")
		}
		_, err := Fatbin()
		assert.True(t, errors.Is(err, gccl.ErrSystem), "%v", err)
		t.Skip("fatbin not built yet (kernels/build.sh on a machine with nvcc); set GCCL_REQUIRE_FATBIN=1 to fail")
	}
	rec, err := Recorded()
	require.NoError(t, err)
	require.Equal(t, rec.Sources, SourcesHash(), "kernel sources changed since the fatbin was built: rerun kernels/build.sh")
	img, err := Fatbin()
	require.NoError(t, err)
	assert.Equal(t, rec.Fatbin, hexSum(img))
}

// TestSourcesHashMatchesShell checks that SourcesHash computes what
// build.sh records.
// TestFatbinHasEveryEntryPoint: build.sh's ptxas report of the committed
// fatbin names every entry point the engine can launch, for sm_80 and
// sm_90, so a kernel the Go side names but no .cu file defines fails here
// rather than at a launch on a GPU.
func TestFatbinHasEveryEntryPoint(t *testing.T) {
	if !Built() {
		t.Skip("fatbin not built yet (kernels/build.sh on a machine with nvcc)")
	}
	report, err := os.ReadFile("fatbin/ptxas.txt")
	require.NoError(t, err)
	names := EntryPoints()
	require.Equal(t, len(mainReductionKernels)*len(gccl.DataTypes())*(int(gccl.NumBuiltinOps)+1)+11, len(names))
	for _, name := range names {
		require.NotEmpty(t, name)
		for _, arch := range []string{"sm_80", "sm_90"} {
			assert.Contains(t, string(report), "Compiling entry function '"+name+"' for '"+arch+"'")
		}
	}
}

// TestRingFatbin: the ring module's fatbin is fresh (built from the
// sources in ring/ and the shared headers) and its ptxas report names every
// entry point the ring backend launches, for sm_80 and sm_90.
func TestRingFatbin(t *testing.T) {
	if !Ring.Built() {
		if os.Getenv("GCCL_REQUIRE_FATBIN") == "1" {
			t.Fatal("kernels/fatbin/ring.fatbin is missing; run MODULES=ring kernels/build.sh")
		}
		_, err := RingFatbin()
		assert.True(t, errors.Is(err, gccl.ErrSystem), "%v", err)
		t.Skip("ring fatbin not built yet (MODULES=ring kernels/build.sh on a machine with nvcc); set GCCL_REQUIRE_FATBIN=1 to fail")
	}
	rec, err := Ring.Recorded()
	require.NoError(t, err)
	require.Equal(t, rec.Sources, Ring.SourcesHash(), "ring kernel sources changed since ring.fatbin was built: rerun MODULES=ring kernels/build.sh")
	img, err := RingFatbin()
	require.NoError(t, err)
	assert.Equal(t, rec.Fatbin, hexSum(img))
	report, err := os.ReadFile("fatbin/ring-ptxas.txt")
	require.NoError(t, err)
	names := RingEntryPoints()
	require.Equal(t, len(ringReductionKernels)*len(gccl.DataTypes())*(int(gccl.NumBuiltinOps)+1)+3, len(names))
	for _, name := range names {
		for _, arch := range []string{"sm_80", "sm_90"} {
			if !strings.Contains(string(report), "Compiling entry function '"+name+"' for '"+arch+"'") {
				t.Fatalf("ring-ptxas.txt lacks %s for %s", name, arch)
			}
		}
	}
}

func TestSourcesHashMatchesShell(t *testing.T) {
	if _, err := exec.LookPath("sha256sum"); err != nil {
		t.Skip("no sha256sum")
	}
	cmd := exec.Command("bash", "-c", "LC_ALL=C ls *.cu *.cuh | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1")
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(string(out)), SourcesHash())
	out, err = exec.Command("bash", "-c", "LC_ALL=C ls *.cuh ring/*.cu | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1").Output()
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(string(out)), Ring.SourcesHash())
	script, err := os.ReadFile("build.sh")
	require.NoError(t, err)
	assert.Contains(t, string(script), "xargs sha256sum | sha256sum | cut -d' ' -f1", "build.sh's hash recipe changed")
}

// TestReductionNames checks the Go names against the instantiation tables
// in instantiate.cuh, so a missing type or operator on either side fails.
func TestReductionNames(t *testing.T) {
	src, err := os.ReadFile("instantiate.cuh")
	require.NoError(t, err)
	var types, ops []string
	for _, m := range regexp.MustCompile(`\tX\(K, [^,]+, (\w+)\)`).FindAllStringSubmatch(string(src), -1) {
		types = append(types, m[1])
	}
	for _, m := range regexp.MustCompile(`\tY\(K, T, tn, OP_\w+, (\w+)\)`).FindAllStringSubmatch(string(src), -1) {
		ops = append(ops, m[1])
	}
	require.Len(t, types, len(gccl.DataTypes()))
	require.Len(t, ops, len(gccl.RedOps())+1)
	for i, dt := range gccl.DataTypes() {
		for j, op := range append(gccl.RedOps(), gccl.NumBuiltinOps+3) {
			name, err := ReductionName(AllReduceOneShot, dt, op)
			require.NoError(t, err)
			assert.Equal(t, "gccl_allreduce_oneshot_"+types[i]+"_"+ops[j], name)
		}
	}
	_, err = ReductionName("allgather", gccl.Float32, gccl.Sum)
	assert.True(t, errors.Is(err, gccl.ErrInvalidArgument))
	_, err = ReductionName(Reduce, gccl.DataType(99), gccl.Sum)
	assert.True(t, errors.Is(err, gccl.ErrInvalidArgument))
	_, err = ReductionName(Reduce, gccl.Float32, gccl.RedOp(-1))
	assert.True(t, errors.Is(err, gccl.ErrInvalidArgument))
	// Every kernel the Go side names is instantiated in a .cu file.
	all := readAll(t, "*.cu")
	for _, k := range []string{AllReduceOneShot, AllReduceTwoShot, AllReducePipelined, ReduceScatter, Reduce} {
		assert.Contains(t, all, "GCCL_INSTANTIATE_RED("+k+")")
	}
	for _, k := range []string{AllGather, Broadcast, P2PCopy, Barrier, FillU32} {
		assert.Regexp(t, `__global__ void (__launch_bounds__\(GCCL_THREADS\)\s+)?`+k+`\(`, all)
	}
	assert.NotContains(t, strings.ToLower(all), "multimem", "NVLink multicast must never be used")
}

func readAll(t *testing.T, pattern string) string {
	names, err := filepath.Glob(pattern)
	require.NoError(t, err)
	var b strings.Builder
	for _, n := range names {
		s, err := os.ReadFile(n)
		require.NoError(t, err)
		b.Write(s)
	}
	return b.String()
}

func TestCommEncode(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var c DevComm
	for i := 0; i < MaxRanks; i++ {
		c.In[i], c.Out[i], c.Scratch[i], c.Flags[i] = uintptr(r.Uint64()), uintptr(r.Uint64()), uintptr(r.Uint64()), uintptr(r.Uint64())
	}
	c.Counters, c.AbortFlag, c.Status = uintptr(r.Uint64()), uintptr(r.Uint64()), uintptr(r.Uint64())
	c.TimeoutNs, c.ScratchBytes = r.Uint64(), r.Uint64()
	c.NRanks, c.Rank, c.Root = int32(r.Uint32()), int32(r.Uint32()), int32(r.Uint32())
	b := c.Encode()
	require.Len(t, b, DevCommBytes)
	le := binary.LittleEndian
	for i := 0; i < MaxRanks; i++ {
		assert.Equal(t, uint64(c.In[i]), le.Uint64(b[8*i:]))
		assert.Equal(t, uint64(c.Out[i]), le.Uint64(b[64+8*i:]))
		assert.Equal(t, uint64(c.Scratch[i]), le.Uint64(b[128+8*i:]))
		assert.Equal(t, uint64(c.Flags[i]), le.Uint64(b[192+8*i:]))
	}
	assert.Equal(t, uint64(c.Counters), le.Uint64(b[256:]))
	assert.Equal(t, uint64(c.AbortFlag), le.Uint64(b[264:]))
	assert.Equal(t, uint64(c.Status), le.Uint64(b[272:]))
	assert.Equal(t, c.TimeoutNs, le.Uint64(b[280:]))
	assert.Equal(t, c.ScratchBytes, le.Uint64(b[288:]))
	assert.Equal(t, uint32(c.NRanks), le.Uint32(b[296:]))
	assert.Equal(t, uint32(c.Rank), le.Uint32(b[300:]))
	assert.Equal(t, uint32(c.Root), le.Uint32(b[304:]))
}

func TestOneShotScratchBytes(t *testing.T) {
	assert.Equal(t, 2*4*1*16, OneShotScratchBytes(1, 4))
	assert.Equal(t, 2*8*2*16, OneShotScratchBytes(9, 8))
	assert.Equal(t, 0, OneShotScratchBytes(0, 8))
}
