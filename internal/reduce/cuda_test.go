package reduce

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"flag"
	"io"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

var fullCUDA = flag.Bool("full", false, "compare every recorded CUDA conversion, not a third")

// TestConversionsMatchCUDA compares every conversion with CUDA 13's own
// (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h host code), recorded on a GPU
// machine by testdata/cudaconv.cu into testdata/cuda_conversions.bin.gz.
// NaN results only need to be NaN in both, and widened NaNs are compared
// as NaN: payloads are not part of the contract.
func TestConversionsMatchCUDA(t *testing.T) {
	f, err := os.Open("testdata/cuda_conversions.bin.gz")
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	data, err := io.ReadAll(zr)
	require.NoError(t, err)
	r := bytes.NewReader(data)
	le := binary.LittleEndian
	next := func(n int) []byte {
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		require.NoError(t, err)
		return b
	}

	widen := []struct {
		name  string
		count int
		got   func(b uint32) float32
	}{
		{"float16", 1 << 16, func(b uint32) float32 { return Float16ToFloat32(uint16(b)) }},
		{"bfloat16", 1 << 16, func(b uint32) float32 { return BFloat16ToFloat32(uint16(b)) }},
		{"e4m3", 256, func(b uint32) float32 { return Float8E4M3ToFloat32(uint8(b)) }},
		{"e5m2", 256, func(b uint32) float32 { return Float8E5M2ToFloat32(uint8(b)) }},
	}
	for _, w := range widen {
		want := next(4 * w.count)
		for b := range uint32(w.count) {
			cu := math.Float32frombits(le.Uint32(want[4*b:]))
			if g := w.got(b); g != cu && !(g != g && cu != cu) {
				t.Fatalf("%s %#x widens to %v, CUDA %v", w.name, b, g, cu)
			}
		}
	}

	tails := []uint32{0, 1, 0xfff, 0x1000, 0x1001, 0x1fff}
	probes := next(6 * len(tails) << 19)
	for hi := range uint32(1 << 19) {
		for i, tail := range tails {
			rec := probes[6*(int(hi)*len(tails)+i):]
			if (int(hi)+i)%3 != 0 && !*fullCUDA {
				continue // every pattern of the top bits, a third of the tails
			}
			x := math.Float32frombits(hi<<13 | tail)
			checkNarrow(t, "float16", x, uint32(Float16FromFloat32(x)), uint32(le.Uint16(rec)), f16Format)
			checkNarrow(t, "bfloat16", x, uint32(BFloat16FromFloat32(x)), uint32(le.Uint16(rec[2:])), bf16Format)
			checkNarrow(t, "e4m3", x, uint32(Float8E4M3FromFloat32(x)), uint32(rec[4]), e4m3Format)
			checkNarrow(t, "e5m2", x, uint32(Float8E5M2FromFloat32(x)), uint32(rec[5]), e5m2Format)
		}
	}
	require.Zero(t, r.Len(), "trailing data")
}

func checkNarrow(t *testing.T, name string, x float32, got, cuda uint32, f *format) {
	if got != cuda && !(f.isNaN(got) && f.isNaN(cuda)) {
		t.Fatalf("%s(%v = %#x): got %#x, CUDA %#x", name, x, math.Float32bits(x), got, cuda)
	}
}
