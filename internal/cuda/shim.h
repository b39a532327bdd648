// Our own declarations of the subset of the CUDA driver ABI that gccl uses.
// This is not cuda.h: it declares only what gccl calls, with the signatures
// of the ABI versions pinned in the function list below, so the package
// builds with no CUDA toolkit.
//
// Host addresses that Go holds as uintptr (pinned memory, registered
// ranges, POSIX FDs passed as handles) are declared uintptr_t for the same
// reason; only Go buffers passed for the duration of a synchronous call are
// declared as C pointers.
//
// Opaque handles (CUcontext, CUstream, CUevent, CUmodule, CUfunction,
// CUgraph, CUgraphExec, CUuserObject) are pointers in the real ABI. We
// declare them as uintptr_t: on every LP64 ABI we build for (x86-64 SysV,
// AArch64 AAPCS64) a pointer and a uintptr_t are passed and returned
// identically, and Go then never converts integers to unsafe.Pointer.
#ifndef GCCL_CUDA_SHIM_H
#define GCCL_CUDA_SHIM_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef uintptr_t CUcontext;
typedef uintptr_t CUstream;
typedef uintptr_t CUevent;
typedef uintptr_t CUmodule;
typedef uintptr_t CUfunction;
typedef uintptr_t CUgraph;
typedef uintptr_t CUgraphExec;
typedef uintptr_t CUuserObject;
typedef void (*CUhostFn)(void *userData);

typedef struct { char bytes[16]; } CUuuid;
typedef struct { char reserved[64]; } CUipcMemHandle;

typedef struct {
	int type; // CUmemLocationType: 1 = device
	int id;
} CUmemLocation;

typedef struct {
	int type;                 // CUmemAllocationType: 1 = pinned
	int requestedHandleTypes; // CUmemAllocationHandleType bit mask
	CUmemLocation location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} CUmemAllocationProp;

typedef struct {
	CUmemLocation location;
	int flags; // CUmemAccess_flags: 3 = read/write
} CUmemAccessDesc;

// Results the shim makes up itself (outside the driver's range).
#define GCCL_CUDA_ERROR_SYMBOL_MISSING 0x7ff00001

// GCCL_CU_FUNCS lists every driver entry point we resolve:
// X(id, "symbol", ABI version, (parameters), (arguments)).
// cuGetProcAddress maps the symbol at the given version to the matching
// versioned export (cuMemAlloc at 3020 is cuMemAlloc_v2, and so on).
#define GCCL_CU_FUNCS(X) \
	X(cuInit, "cuInit", 2000, (unsigned int f), (f)) \
	X(cuDriverGetVersion, "cuDriverGetVersion", 2020, (int *v), (v)) \
	X(cuGetErrorName, "cuGetErrorName", 6000, (CUresult r, const char **s), (r, s)) \
	X(cuGetErrorString, "cuGetErrorString", 6000, (CUresult r, const char **s), (r, s)) \
	X(cuDeviceGetCount, "cuDeviceGetCount", 2000, (int *n), (n)) \
	X(cuDeviceGet, "cuDeviceGet", 2000, (CUdevice *d, int o), (d, o)) \
	X(cuDeviceGetAttribute, "cuDeviceGetAttribute", 2000, (int *v, int a, CUdevice d), (v, a, d)) \
	X(cuDeviceGetName, "cuDeviceGetName", 2000, (char *s, int n, CUdevice d), (s, n, d)) \
	X(cuDeviceGetUuid, "cuDeviceGetUuid", 11040, (CUuuid *u, CUdevice d), (u, d)) \
	X(cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer", 4000, (int *c, CUdevice d, CUdevice p), (c, d, p)) \
	X(cuDeviceGetP2PAttribute, "cuDeviceGetP2PAttribute", 8000, (int *v, int a, CUdevice s, CUdevice d), (v, a, s, d)) \
	X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 7000, (CUcontext *c, CUdevice d), (c, d)) \
	X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", 11000, (CUdevice d), (d)) \
	X(cuCtxSetCurrent, "cuCtxSetCurrent", 4000, (CUcontext c), (c)) \
	X(cuCtxGetCurrent, "cuCtxGetCurrent", 4000, (CUcontext *c), (c)) \
	X(cuCtxSynchronize, "cuCtxSynchronize", 2000, (void), ()) \
	X(cuProfilerStart, "cuProfilerStart", 4000, (void), ()) \
	X(cuProfilerStop, "cuProfilerStop", 4000, (void), ()) \
	X(cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess", 4000, (CUcontext c, unsigned int f), (c, f)) \
	X(cuMemGetInfo, "cuMemGetInfo", 3020, (size_t *fr, size_t *tot), (fr, tot)) \
	X(cuMemAlloc, "cuMemAlloc", 3020, (CUdeviceptr *p, size_t n), (p, n)) \
	X(cuMemFree, "cuMemFree", 3020, (CUdeviceptr p), (p)) \
	X(cuMemGetAddressRange, "cuMemGetAddressRange", 3020, (CUdeviceptr *b, size_t *n, CUdeviceptr p), (b, n, p)) \
	X(cuMemHostAlloc, "cuMemHostAlloc", 2020, (uintptr_t *p, size_t n, unsigned int f), (p, n, f)) \
	X(cuMemFreeHost, "cuMemFreeHost", 2000, (uintptr_t p), (p)) \
	X(cuMemHostRegister, "cuMemHostRegister", 6050, (uintptr_t p, size_t n, unsigned int f), (p, n, f)) \
	X(cuMemHostUnregister, "cuMemHostUnregister", 4000, (uintptr_t p), (p)) \
	X(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer", 3020, (CUdeviceptr *d, uintptr_t p, unsigned int f), (d, p, f)) \
	X(cuMemsetD8Async, "cuMemsetD8Async", 3020, (CUdeviceptr p, unsigned char v, size_t n, CUstream s), (p, v, n, s)) \
	X(cuMemsetD32Async, "cuMemsetD32Async", 3020, (CUdeviceptr p, unsigned int v, size_t n, CUstream s), (p, v, n, s)) \
	X(cuMemcpyHtoD, "cuMemcpyHtoD", 3020, (CUdeviceptr d, const void *h, size_t n), (d, h, n)) \
	X(cuMemcpyDtoH, "cuMemcpyDtoH", 3020, (void *h, CUdeviceptr d, size_t n), (h, d, n)) \
	X(cuMemcpyDtoD, "cuMemcpyDtoD", 3020, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n)) \
	X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync", 3020, (CUdeviceptr d, uintptr_t h, size_t n, CUstream s), (d, h, n, s)) \
	X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync", 3020, (uintptr_t h, CUdeviceptr d, size_t n, CUstream s), (h, d, n, s)) \
	X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync", 3020, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st)) \
	X(cuStreamCreate, "cuStreamCreate", 2000, (CUstream *s, unsigned int f), (s, f)) \
	X(cuStreamDestroy, "cuStreamDestroy", 4000, (CUstream s), (s)) \
	X(cuStreamSynchronize, "cuStreamSynchronize", 2000, (CUstream s), (s)) \
	X(cuStreamQuery, "cuStreamQuery", 2000, (CUstream s), (s)) \
	X(cuStreamWaitEvent, "cuStreamWaitEvent", 3020, (CUstream s, CUevent e, unsigned int f), (s, e, f)) \
	X(cuEventCreate, "cuEventCreate", 2000, (CUevent *e, unsigned int f), (e, f)) \
	X(cuEventDestroy, "cuEventDestroy", 4000, (CUevent e), (e)) \
	X(cuEventRecord, "cuEventRecord", 2000, (CUevent e, CUstream s), (e, s)) \
	X(cuEventSynchronize, "cuEventSynchronize", 2000, (CUevent e), (e)) \
	X(cuEventQuery, "cuEventQuery", 2000, (CUevent e), (e)) \
	X(cuEventElapsedTime, "cuEventElapsedTime", 2000, (float *ms, CUevent a, CUevent b), (ms, a, b)) \
	X(cuModuleLoadData, "cuModuleLoadData", 2000, (CUmodule *m, const void *img), (m, img)) \
	X(cuModuleUnload, "cuModuleUnload", 2000, (CUmodule m), (m)) \
	X(cuModuleGetFunction, "cuModuleGetFunction", 2000, (CUfunction *f, CUmodule m, const char *n), (f, m, n)) \
	X(cuFuncLoad, "cuFuncLoad", 12040, (CUfunction f), (f)) \
	X(cuFuncGetAttribute, "cuFuncGetAttribute", 2020, (int *v, int a, CUfunction f), (v, a, f)) \
	X(cuCtxGetLimit, "cuCtxGetLimit", 3010, (size_t *v, int l), (v, l)) \
	X(cuCtxSetLimit, "cuCtxSetLimit", 3010, (int l, size_t v), (l, v)) \
	X(cuLaunchKernel, "cuLaunchKernel", 4000, \
		(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, \
		 unsigned int bz, unsigned int shm, CUstream s, void **params, void **extra), \
		(f, gx, gy, gz, bx, by, bz, shm, s, params, extra)) \
	X(cuIpcGetMemHandle, "cuIpcGetMemHandle", 4010, (CUipcMemHandle *h, CUdeviceptr p), (h, p)) \
	X(cuIpcOpenMemHandle, "cuIpcOpenMemHandle", 11000, (CUdeviceptr *p, CUipcMemHandle h, unsigned int f), (p, h, f)) \
	X(cuIpcCloseMemHandle, "cuIpcCloseMemHandle", 4010, (CUdeviceptr p), (p)) \
	X(cuMemCreate, "cuMemCreate", 10020, \
		(CUmemGenericAllocationHandle *h, size_t n, const CUmemAllocationProp *pr, unsigned long long f), (h, n, pr, f)) \
	X(cuMemRelease, "cuMemRelease", 10020, (CUmemGenericAllocationHandle h), (h)) \
	X(cuMemMap, "cuMemMap", 10020, \
		(CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h, unsigned long long f), (p, n, off, h, f)) \
	X(cuMemUnmap, "cuMemUnmap", 10020, (CUdeviceptr p, size_t n), (p, n)) \
	X(cuMemSetAccess, "cuMemSetAccess", 10020, (CUdeviceptr p, size_t n, const CUmemAccessDesc *d, size_t c), (p, n, d, c)) \
	X(cuMemAddressReserve, "cuMemAddressReserve", 10020, \
		(CUdeviceptr *p, size_t n, size_t al, CUdeviceptr addr, unsigned long long f), (p, n, al, addr, f)) \
	X(cuMemAddressFree, "cuMemAddressFree", 10020, (CUdeviceptr p, size_t n), (p, n)) \
	X(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity", 10020, \
		(size_t *g, const CUmemAllocationProp *pr, int o), (g, pr, o)) \
	X(cuMemExportToShareableHandle, "cuMemExportToShareableHandle", 10020, \
		(int *out, CUmemGenericAllocationHandle h, int t, unsigned long long f), (out, h, t, f)) \
	X(cuMemImportFromShareableHandle, "cuMemImportFromShareableHandle", 10020, \
		(CUmemGenericAllocationHandle *h, uintptr_t os, int t), (h, os, t)) \
	X(cuMemRetainAllocationHandle, "cuMemRetainAllocationHandle", 11000, (CUmemGenericAllocationHandle *h, uintptr_t p), (h, p)) \
	X(cuStreamBeginCapture, "cuStreamBeginCapture", 10010, (CUstream s, int mode), (s, mode)) \
	X(cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode", 10010, (int *mode), (mode)) \
	X(cuStreamEndCapture, "cuStreamEndCapture", 10000, (CUstream s, CUgraph *g), (s, g)) \
	X(cuStreamIsCapturing, "cuStreamIsCapturing", 10000, (CUstream s, int *st), (s, st)) \
	X(cuStreamGetCaptureInfo_v3, "cuStreamGetCaptureInfo", 12030, \
		(CUstream s, int *st, unsigned long long *id, CUgraph *g, const void **deps, const void **edges, size_t *nd), \
		(s, st, id, g, deps, edges, nd)) \
	X(cuStreamGetCaptureInfo_v2, "cuStreamGetCaptureInfo", 11030, \
		(CUstream s, int *st, unsigned long long *id, CUgraph *g, const void **deps, size_t *nd), (s, st, id, g, deps, nd)) \
	X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", 11040, \
		(CUgraphExec *e, CUgraph g, unsigned long long f), (e, g, f)) \
	X(cuGraphLaunch, "cuGraphLaunch", 10000, (CUgraphExec e, CUstream s), (e, s)) \
	X(cuGraphDestroy, "cuGraphDestroy", 10000, (CUgraph g), (g)) \
	X(cuGraphExecDestroy, "cuGraphExecDestroy", 10000, (CUgraphExec e), (e)) \
	X(cuUserObjectCreate, "cuUserObjectCreate", 11030, \
		(CUuserObject *o, void *p, CUhostFn fn, unsigned int rc, unsigned int f), (o, p, fn, rc, f)) \
	X(cuUserObjectRelease, "cuUserObjectRelease", 11030, (CUuserObject o, unsigned int n), (o, n)) \
	X(cuGraphRetainUserObject, "cuGraphRetainUserObject", 11030, \
		(CUgraph g, CUuserObject o, unsigned int n, unsigned int f), (g, o, n, f)) \
	X(cuLaunchHostFunc, "cuLaunchHostFunc", 10000, (CUstream s, CUhostFn fn, void *u), (s, fn, u)) \
	X(cuStreamWriteValue32, "cuStreamWriteValue32", 12000, (CUstream s, CUdeviceptr a, unsigned int v, unsigned int f), (s, a, v, f)) \
	X(cuStreamWriteValue64, "cuStreamWriteValue64", 12000, \
		(CUstream s, CUdeviceptr a, unsigned long long v, unsigned int f), (s, a, v, f)) \
	X(cuStreamWaitValue32, "cuStreamWaitValue32", 12000, (CUstream s, CUdeviceptr a, unsigned int v, unsigned int f), (s, a, v, f)) \
	X(cuStreamWaitValue64, "cuStreamWaitValue64", 12000, \
		(CUstream s, CUdeviceptr a, unsigned long long v, unsigned int f), (s, a, v, f)) \
	X(cuPointerGetAttribute, "cuPointerGetAttribute", 4000, (unsigned long long *d, int a, CUdeviceptr p), (d, a, p)) \
	X(cuPointerGetAttributes, "cuPointerGetAttributes", 7000, (unsigned int n, int *a, void **d, CUdeviceptr p), (n, a, d, p))

#define GCCL_CU_PROTO(id, sym, ver, params, args) CUresult gccl_##id params;
GCCL_CU_FUNCS(GCCL_CU_PROTO)
#undef GCCL_CU_PROTO

// gccl_cuda_load opens libcuda.so.1 and resolves every entry point. It
// returns 0 on success, else -1 with a message in err (size errlen).
int gccl_cuda_load(char *err, int errlen);

// gccl_cuda_missing reports the pinned version of a symbol the driver did
// not provide (0 when resolved or unknown), for error messages.
int gccl_cuda_symbol_version(const char *id, int *resolved);

// gccl_launch builds the kernelParams array from a packed argument buffer.
CUresult gccl_launch(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
		     unsigned int by, unsigned int bz, unsigned int shm, CUstream s, unsigned char *buf,
		     const uint32_t *offs, int n);

// Host functions and user-object destructors call back into Go with a handle.
CUresult gccl_launch_host_func(CUstream s, uintptr_t handle);
CUresult gccl_user_object_create(CUuserObject *o, uintptr_t handle);

// Pointer-attribute queries into 8-byte slots.
CUresult gccl_pointer_get_attributes(unsigned int n, int *attrs, unsigned long long *slots, CUdeviceptr p);

#endif
