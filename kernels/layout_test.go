package kernels

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cudaStubs stand in for the CUDA headers so a host C++ compiler can parse
// common.cuh and report struct gcclComm's layout.
var cudaStubs = map[string]string{
	"cuda_fp16.h": `#pragma once
#define __device__
#define __forceinline__ inline
struct uint2 { unsigned x, y; };
struct uint4 { unsigned x, y, z, w; };
struct dim3 { unsigned x, y, z; };
extern dim3 threadIdx, blockIdx, blockDim, gridDim;
inline uint4 __ldcg(const uint4 *p) { return *p; }
inline void __stcg(uint4 *p, uint4 v) { *p = v; }
struct __half { unsigned short x; };
inline float __half2float(__half) { return 0; }
inline __half __float2half_rn(float) { return __half(); }
`,
	"cuda_bf16.h": `#pragma once
struct __nv_bfloat16 { unsigned short x; };
inline float __bfloat162float(__nv_bfloat16) { return 0; }
inline __nv_bfloat16 __float2bfloat16_rn(float) { return __nv_bfloat16(); }
`,
	"cuda_fp8.h": `#pragma once
struct __nv_fp8_e4m3 { unsigned char x; __nv_fp8_e4m3() = default; explicit __nv_fp8_e4m3(float) {} explicit operator float() const { return 0; } };
struct __nv_fp8_e5m2 { unsigned char x; __nv_fp8_e5m2() = default; explicit __nv_fp8_e5m2(float) {} explicit operator float() const { return 0; } };
`,
	"main.cpp": `#include <cstdio>
#include <cstddef>
#include "common.cuh"
int main() {
	printf("%zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %d %d %d\n", sizeof(gcclComm), alignof(gcclComm),
	       offsetof(gcclComm, out), offsetof(gcclComm, scratch), offsetof(gcclComm, flags), offsetof(gcclComm, counters),
	       offsetof(gcclComm, abortFlag), offsetof(gcclComm, status), offsetof(gcclComm, timeoutNs),
	       offsetof(gcclComm, scratchBytes), offsetof(gcclComm, nranks), offsetof(gcclComm, rank), offsetof(gcclComm, root),
	       (size_t)GCCL_MAX_RANKS, GCCL_MAX_CHANNELS, GCCL_THREADS, GCCL_FLAGS_WORDS + GCCL_COUNTER_WORDS);
}
`,
}

// TestCommLayoutMatchesC compiles common.cuh with the host C++ compiler
// (CUDA headers stubbed) and checks gcclComm's layout against Encode.
func TestCommLayoutMatchesC(t *testing.T) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++ to check the C layout")
	}
	dir := t.TempDir()
	for name, body := range cudaStubs {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	here, err := os.Getwd()
	require.NoError(t, err)
	bin := filepath.Join(dir, "layout")
	out, err := exec.Command(cxx, "-std=c++17", "-I", dir, "-I", here, "-o", bin, filepath.Join(dir, "main.cpp")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	got, err := exec.Command(bin).Output()
	require.NoError(t, err)
	want := []int{DevCommBytes, DevCommAlign, 64, 128, 192, 256, 264, 272, 280, 288, 296, 300, 304,
		MaxRanks, MaxChannels, Threads, FlagsWords + CounterWords}
	var wantS []string
	for _, v := range want {
		wantS = append(wantS, strconv.Itoa(v))
	}
	require.Equal(t, strings.Join(wantS, " "), strings.TrimSpace(string(got)))
}

// TestRingLayoutMatchesC compiles the ring module's descriptor structs
// (ring/ring.cu, from its first #define to the end of struct
// gcclNetP2PDesc: plain C) with the host C++ compiler and checks their
// layout against RingDesc.Put and NetP2PDesc.Put.
func TestRingLayoutMatchesC(t *testing.T) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++ to check the C layout")
	}
	src, err := os.ReadFile("ring/ring.cu")
	require.NoError(t, err)
	s := string(src)
	from, to := strings.Index(s, "#define GCCL_RING_MAX_CHANNELS"), strings.Index(s, "struct gcclNetP2PDesc {")
	require.True(t, from >= 0 && to > from, "ring.cu's descriptor structs not found")
	end := strings.Index(s[to:], "};")
	require.Positive(t, end)
	main := s[from:to+end+2] + `
#include <cstdio>
#include <cstddef>
int main() {
	printf("%zu %zu %zu %zu %zu %zu %zu %zu %zu %d\n", sizeof(gcclRingDesc), alignof(gcclRingDesc),
	       offsetof(gcclRingDesc, nranks), offsetof(gcclRingDesc, pos), offsetof(gcclRingDesc, root),
	       offsetof(gcclRingDesc, ranks), offsetof(gcclRingDesc, ch), sizeof(gcclNetP2PDesc), alignof(gcclNetP2PDesc),
	       GCCL_RING_TRAILER);
}
`
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.cpp"), []byte(main), 0o644))
	bin := filepath.Join(dir, "layout")
	out, err := exec.Command(cxx, "-std=c++17", "-o", bin, filepath.Join(dir, "main.cpp")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	got, err := exec.Command(bin).Output()
	require.NoError(t, err)
	want := []int{RingDescBytes, RingDescAlign, 36, 40, 44, 48, ringDescHeadBytes, NetP2PDescBytes, NetP2PDescAlign, RingTrailerBytes}
	var wantS []string
	for _, v := range want {
		wantS = append(wantS, strconv.Itoa(v))
	}
	require.Equal(t, strings.Join(wantS, " "), strings.TrimSpace(string(got)))
}
