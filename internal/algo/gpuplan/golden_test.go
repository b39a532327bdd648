package gpuplan

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gccl/gccl/internal/algo"
	"github.com/gccl/gccl/transport/topo"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden tables under testdata/")

// gpuScenario is one section of a GPU golden table: a way of running
// every kind at every size.
type gpuScenario struct {
	name string
	mod  func(in *Input)
}

// gpuScenarios are the sections of testdata/n*.txt. "registered"
// means the lookup Choose asks for (RegLookup) finds the buffers.
var gpuScenarios = []gpuScenario{
	{"eager", func(in *Input) {}},
	{"eager, registered", func(in *Input) { in.CommRegistered, in.Registered = true, true }},
	{"eager, communicator has registrations, these buffers not", func(in *Input) { in.CommRegistered = true }},
	{"captured, graph registration works", func(in *Input) { in.Capturing, in.Registered = true, true }},
	{"captured, graph registration fails", func(in *Input) { in.Capturing = true }},
	{"eager, in place", func(in *Input) { in.InPlace = true }},
	{"eager, PreMulSum (reductions), registered", func(in *Input) {
		in.PreMulSum, in.CommRegistered, in.Registered = in.Kind.Reduces(), true, true
	}},
	{"GCCL_PROTO=LL, registered", func(in *Input) { in.Set.Protos = 1 << algo.LL; in.CommRegistered, in.Registered = true, true }},
	{"GCCL_PROTO=^LL", func(in *Input) { in.Set.Protos = algo.AllProtocols &^ (1 << algo.LL) }},
	{"GCCL_PROTO=LL128", func(in *Input) { in.Set.Protos = 1 << algo.LL128 }},
	{"GCCL_ALGO=^direct, registered", func(in *Input) {
		in.Set.Algos = algo.AllAlgorithms &^ (1 << algo.Direct)
		in.CommRegistered, in.Registered = true, true
	}},
	{"GCCL_ALGO=ring (nothing the GPU has: pipelined), registered", func(in *Input) { in.Set.Algos = 1 << algo.Ring; in.CommRegistered, in.Registered = true, true }},
	{"GCCL_MAX_NCHANNELS=8 GCCL_GPU_LL_MAX=16K GCCL_GPU_PUSH_MAX=4M GCCL_GPU_BUFFSIZE=3M+5", func(in *Input) {
		in.Set = NewSettings(8, 3<<20+5, 16<<10, 4<<20, algo.AllAlgorithms, algo.AllProtocols)
	}},
	{"peer over PCIe", func(in *Input) { in.Link = topo.LinkPCIe }},
	{"via the host (peers not mapped)", func(in *Input) { in.PeersMapped = false }},
	{"via the host, captured", func(in *Input) { in.PeersMapped, in.Capturing = false, true }},
}

// gpuSizes are the golden tables' rows: every power of two from 8 B to
// 1 GiB and odd sizes around the thresholds.
func gpuSizes() []int {
	sizes := []int{1, 3, 100, 1000, 12345, 131073, 1000003, 1048577, 16777217, 100000007}
	for b := 8; b <= 1<<30; b *= 2 {
		sizes = append(sizes, b)
	}
	slices.Sort(sizes)
	return sizes
}

// gpuCell is one kind at one size: the choice, compactly.
func gpuCell(in Input) string {
	c, err := Choose(in)
	switch {
	case err == ErrViaHostCapture:
		return "refused"
	case err != nil:
		return "error"
	case c.Kernel == KernelNone || c.Kernel == KernelCopy || c.Kernel == KernelViaHost:
		return c.Kernel.String()
	}
	return fmt.Sprintf("%s/%d/%s", c.Kernel, c.Grid, c.Area)
}

// gpuTable renders the golden table of nranks, rank 0, root 0, peer 1 (0
// with one rank): a section per scenario, a row per size (bytes per rank,
// per block for ReduceScatter; 4-byte elements where they divide), a
// column per kind; a cell is kernel/grid/area.
func gpuTable(nranks int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ChooseGPU, %d rank(s), rank 0, root 0, peer %d; cells: kernel/grid/area\n", nranks, 1%nranks)
	for _, sc := range gpuScenarios {
		fmt.Fprintf(&b, "\n== %s\n%-10s", sc.name, "bytes")
		for k := range algo.NumKinds {
			fmt.Fprintf(&b, " %-19s", k)
		}
		b.WriteString("\n")
		for _, bytes := range gpuSizes() {
			fmt.Fprintf(&b, "%-10d", bytes)
			for k := range algo.NumKinds {
				in := gpuBase(k, bytes, nranks)
				sc.mod(&in)
				fmt.Fprintf(&b, " %-19s", gpuCell(in))
			}
			b.WriteString("\n")
		}
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// gpuBase is the default input for kind at bytes over nranks (rank 0).
func gpuBase(k algo.Kind, bytes, nranks int) Input {
	es := 1
	if bytes%4 == 0 {
		es = 4
	}
	return Input{Kind: k, Count: bytes / es, ElemSize: es, NRanks: nranks, Peer: 1 % nranks,
		Link: topo.LinkNVLink, PeersMapped: true, Set: DefaultSettings()}
}

// TestGolden checks Choose against testdata/n{1,2,4,8}.txt. Run
// with -update to rewrite them after an intended change, and review the
// diff: every changed cell is a kernel the GPU backend now runs differently.
func TestGolden(t *testing.T) {
	for _, n := range []int{1, 2, 4, 8} {
		t.Run(fmt.Sprintf("n%d", n), func(t *testing.T) { checkGolden(t, fmt.Sprintf("n%d.txt", n), gpuTable(n)) })
	}
}

// checkGolden compares got with testdata/name, or rewrites it with
// -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -run TestGolden -update to create it")
	require.Equal(t, string(want), got)
}
