//go:build cgo

package nccl

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests run in file order: the missing-library paths first, then a
// fake libnccl built with the C compiler replaces the shim's symbols.

func TestLoadMissing(t *testing.T) {
	n, err := Load()
	if err == nil {
		t.Logf("libnccl.so.2 is present (NCCL %s); the missing-library path is not exercised", VersionString(n.Version()))
		return
	}
	assert.Nil(t, n)
	assert.ErrorIs(t, err, ErrNoLibrary)
	assert.ErrorIs(t, err, gccl.ErrSystem)
	assert.Contains(t, err.Error(), "libnccl.so.2 not found")
	_, err2 := Load()
	assert.Same(t, err, err2, "Load must be memoised")

	// With no library loaded every wrapper answers "symbol missing".
	var s shim
	_, r := s.version()
	assert.Equal(t, SymbolMissing, r)
	issued, r := s.launch([]packed{{kind: int32(AllReduce)}}, false)
	assert.Equal(t, SymbolMissing, r)
	assert.Zero(t, issued)
	_, r = s.launch([]packed{{kind: int32(Send)}, {kind: int32(Recv)}}, true)
	assert.Equal(t, SymbolMissing, r, "ncclGroupStart is missing too")
	assert.False(t, s.has("ncclGetVersion"))
	assert.Empty(t, s.errorString(InternalError))
}

func TestLoadErrors(t *testing.T) {
	_, err := load("libgccl-no-such-library.so.2")
	assert.ErrorIs(t, err, ErrNoLibrary)
	assert.Contains(t, err.Error(), "libgccl-no-such-library.so.2 not found")

	_, err = load("libc.so.6")
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrNoLibrary, "a library that is not NCCL is a different failure")
	assert.ErrorIs(t, err, gccl.ErrSystem)
	assert.Contains(t, err.Error(), "does not export ncclGetVersion")

	var s shim
	issued, r := s.launch([]packed{{kind: 99}}, false)
	assert.Equal(t, BadOp, r, "the C dispatcher refuses unknown kinds")
	assert.Zero(t, issued)
}

// fakeNCCLSource is a libnccl stand-in: data calls write what they
// received, as uint64s, at their buffer (host memory in this test).
const fakeNCCLSource = `
#include <stdint.h>
#include <stdlib.h>
#include <limits.h>
typedef struct { unsigned char b[128]; } uid;
typedef struct { size_t size; unsigned magic, version; int blocking, cga, minc, maxc; uintptr_t net; } cfg;
typedef struct { int polls; } comm;
static int depth;
int ncclGetVersion(int *v) { *v = 22805; return 0; }
int ncclGetUniqueId(uid *id) { for (int i = 0; i < 128; i++) id->b[i] = (unsigned char)(3 * i); return 0; }
static int badID(uid id) { for (int i = 0; i < 128; i++) if (id.b[i] != (unsigned char)(3 * i)) return 1; return 0; }
int ncclCommInitRank(comm **c, int n, uid id, int r) { return 4; }
int ncclCommInitRankConfig(comm **c, int n, uid id, int r, cfg *f) {
	if (badID(id) || n != 3 || r != 2 || f->size != sizeof(cfg) || f->magic != 0xcafebeef || f->version < 21700 ||
	    f->blocking != 0 || f->cga != INT_MIN || f->minc != INT_MIN || f->maxc != INT_MIN || f->net != 0) return 4;
	*c = malloc(sizeof(comm)); (*c)->polls = 3; return 7;
}
int ncclCommGetAsyncError(comm *c, int *e) { *e = c->polls > 0 ? 7 : 0; if (c->polls > 0) c->polls--; return 0; }
int ncclCommDestroy(comm *c) { free(c); return 0; }
int ncclCommAbort(comm *c) { free(c); return 0; }
const char *ncclGetErrorString(int r) { return "fake error string"; }
const char *ncclGetLastError(comm *c) { return "fake last error"; }
static int put(uintptr_t at, uint64_t kind, uintptr_t s, uintptr_t r, size_t n, int t, int o, int root, comm *c, uintptr_t st) {
	uint64_t *w = (uint64_t *)at;
	w[0] = kind; w[1] = s; w[2] = r; w[3] = n; w[4] = t; w[5] = o; w[6] = root; w[7] = (uintptr_t)c; w[8] = st; w[9] = depth;
	return n == 12345 ? 6 : 0;
}
int ncclAllReduce(uintptr_t s, uintptr_t r, size_t n, int t, int o, comm *c, uintptr_t st) { return put(r, 1, s, r, n, t, o, -1, c, st); }
int ncclBroadcast(uintptr_t s, uintptr_t r, size_t n, int t, int root, comm *c, uintptr_t st) { return put(r, 2, s, r, n, t, -1, root, c, st); }
int ncclReduce(uintptr_t s, uintptr_t r, size_t n, int t, int o, int root, comm *c, uintptr_t st) { return put(s, 3, s, r, n, t, o, root, c, st); }
int ncclAllGather(uintptr_t s, uintptr_t r, size_t n, int t, comm *c, uintptr_t st) { return put(r, 4, s, r, n, t, -1, -1, c, st); }
int ncclReduceScatter(uintptr_t s, uintptr_t r, size_t n, int t, int o, comm *c, uintptr_t st) { return put(r, 5, s, r, n, t, o, -1, c, st); }
int ncclSend(uintptr_t s, size_t n, int t, int p, comm *c, uintptr_t st) { return put(s, 6, s, 0, n, t, -1, p, c, st); }
int ncclRecv(uintptr_t r, size_t n, int t, int p, comm *c, uintptr_t st) { return put(r, 7, 0, r, n, t, -1, p, c, st); }
int ncclGroupStart(void) { depth++; return 0; }
int ncclGroupEnd(void) { depth--; return 0; }
int ncclCommRegister(comm *c, uintptr_t p, size_t n, uintptr_t *h) { *h = p + n; return 0; }
int ncclCommDeregister(comm *c, uintptr_t h) { return h == 0 ? 4 : 0; }
int ncclMemAlloc(uintptr_t *p, size_t n) { *p = (uintptr_t)malloc(n); return *p ? 0 : 1; }
int ncclMemFree(uintptr_t p) { free((void *)p); return 0; }
`

// buildFakeNCCL compiles fakeNCCLSource into a shared library.
func buildFakeNCCL(t *testing.T) string {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s) to build the fake libnccl", cc)
	}
	dir := t.TempDir()
	src, lib := filepath.Join(dir, "fake.c"), filepath.Join(dir, "libfakenccl.so")
	require.NoError(t, os.WriteFile(src, []byte(fakeNCCLSource), 0o600))
	out, err := exec.Command(cc, "-shared", "-fPIC", "-o", lib, src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return lib
}

func TestNCCLThroughFakeLibrary(t *testing.T) {
	n, err := load(buildFakeNCCL(t))
	require.NoError(t, err)
	assert.Equal(t, 22805, n.Version())
	id, err := n.UniqueID()
	require.NoError(t, err)
	assert.Equal(t, byte(3*77), id[77])
	c, err := n.InitRank(3, id, 2, 5*time.Second)
	require.NoError(t, err, "the fake checks the unique ID and every config member it was given")
	defer c.Close()

	mem, err := syscall.Mmap(-1, 0, 4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	defer syscall.Munmap(mem)
	base := uintptr(unsafe.Pointer(&mem[0]))
	word := func(i int) uint64 { return binary.LittleEndian.Uint64(mem[8*i:]) }
	const s = gccl.Stream(0x5eed)

	require.NoError(t, c.ReduceScatter(0x777, base, 99, gccl.BFloat16, gccl.Avg, s))
	assert.Equal(t, []uint64{5, 0x777, uint64(base), 99, 9, 4, ^uint64(0), uint64(c.h), 0x5eed, 0}, words(word, 10))
	require.NoError(t, c.Reduce(base, 0, 7, gccl.Int64, gccl.Min, 1, s))
	assert.Equal(t, []uint64{3, uint64(base), 0, 7, 4, 3, 1, uint64(c.h), 0x5eed, 0}, words(word, 10))

	// A group: both calls run inside ncclGroupStart/End (depth 1); the
	// second overwrites the first's record in the same memory.
	require.NoError(t, c.Launch(s, Op{Kind: Send, Send: base, Count: 5, Type: gccl.Uint8, Peer: 0},
		Op{Kind: Recv, Recv: base, Count: 6, Type: gccl.Float8E5M2, Peer: 1}))
	assert.Equal(t, []uint64{7, 0, uint64(base), 6, 11, ^uint64(0), 1, uint64(c.h), 0x5eed, 1}, words(word, 10))

	err = c.AllReduce(base, base, 12345, gccl.Float32, gccl.Sum, s)
	require.ErrorIs(t, err, gccl.ErrRemote)
	assert.Contains(t, err.Error(), "fake error string")
	assert.Contains(t, err.Error(), "fake last error")

	h, err := c.Register(base, 4096)
	require.NoError(t, err)
	assert.Equal(t, base+4096, h)
	require.NoError(t, c.Deregister(h))
	p, err := n.MemAlloc(64)
	require.NoError(t, err)
	require.NoError(t, n.MemFree(p))
	require.NoError(t, c.Close())
}

func words(word func(int) uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = word(i)
	}
	return out
}
