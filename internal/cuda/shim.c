// The dlopen boundary: libcuda.so.1 is opened at run time, cuGetProcAddress
// is found with dlsym, and every other entry point is resolved through it at
// the ABI version pinned in shim.h (NCCL's cudawrap pattern). Nothing here
// is linked against libcuda; the package builds with no CUDA toolkit.
#include "shim.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "_cgo_export.h"

#define GCCL_CU_PFN(id, sym, ver, params, args) static CUresult(*pfn_##id) params;
GCCL_CU_FUNCS(GCCL_CU_PFN)
#undef GCCL_CU_PFN

#define GCCL_CU_WRAP(id, sym, ver, params, args) \
	CUresult gccl_##id params \
	{ \
		if (pfn_##id == NULL) \
			return GCCL_CUDA_ERROR_SYMBOL_MISSING; \
		return pfn_##id args; \
	}
GCCL_CU_FUNCS(GCCL_CU_WRAP)
#undef GCCL_CU_WRAP

static const struct {
	const char *id;
	const char *sym;
	int version;
	void **pfn;
} table[] = {
#define GCCL_CU_ENTRY(id, s, ver, params, args) {#id, s, ver, (void **)&pfn_##id},
	GCCL_CU_FUNCS(GCCL_CU_ENTRY)
#undef GCCL_CU_ENTRY
};

// cuGetProcAddress_v2 (CUDA 12.0+) and cuGetProcAddress (11.3+).
typedef CUresult (*get_proc_v2_t)(const char *, void **, int, unsigned long long, int *);
typedef CUresult (*get_proc_v1_t)(const char *, void **, int, unsigned long long);

static int loaded;

static int resolve(void *lib, char *err, int errlen)
{
	get_proc_v2_t gp2 = (get_proc_v2_t)dlsym(lib, "cuGetProcAddress_v2");
	get_proc_v1_t gp1 = (get_proc_v1_t)dlsym(lib, "cuGetProcAddress");
	if (gp2 == NULL && gp1 == NULL) {
		snprintf(err, errlen, "libcuda.so.1 has no cuGetProcAddress (driver older than CUDA 11.3)");
		return -1;
	}
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		void *fn = NULL;
		CUresult r;
		if (gp2 != NULL) {
			int status = 0;
			r = gp2(table[i].sym, &fn, table[i].version, 0, &status);
			if (status != 0)
				fn = NULL;
		} else {
			r = gp1(table[i].sym, &fn, table[i].version, 0);
		}
		*table[i].pfn = (r == 0) ? fn : NULL;
	}
	if (pfn_cuInit == NULL || pfn_cuGetErrorName == NULL || pfn_cuGetErrorString == NULL) {
		snprintf(err, errlen, "libcuda.so.1 lacks cuInit or cuGetErrorName/String");
		return -1;
	}
	return 0;
}

int gccl_cuda_load(char *err, int errlen)
{
	if (loaded)
		return 0;
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : "dlopen(libcuda.so.1) failed");
		return -1;
	}
	if (resolve(lib, err, errlen) != 0) {
		dlclose(lib);
		return -1;
	}
	loaded = 1;
	return 0;
}

int gccl_cuda_symbol_version(const char *id, int *resolved)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (strcmp(table[i].id, id) == 0) {
			*resolved = *table[i].pfn != NULL;
			return table[i].version;
		}
	}
	*resolved = 0;
	return 0;
}

#define GCCL_MAX_KERNEL_ARGS 64

CUresult gccl_launch(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
		     unsigned int by, unsigned int bz, unsigned int shm, CUstream s, unsigned char *buf,
		     const uint32_t *offs, int n)
{
	void *params[GCCL_MAX_KERNEL_ARGS];
	if (n < 0 || n > GCCL_MAX_KERNEL_ARGS)
		return 1; // CUDA_ERROR_INVALID_VALUE
	for (int i = 0; i < n; i++)
		params[i] = buf + offs[i];
	return gccl_cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shm, s, n ? params : NULL, NULL);
}

static void host_trampoline(void *user) { gcclHostCallback((uintptr_t)user); }

CUresult gccl_launch_host_func(CUstream s, uintptr_t handle)
{
	return gccl_cuLaunchHostFunc(s, host_trampoline, (void *)handle);
}

CUresult gccl_user_object_create(CUuserObject *o, uintptr_t handle)
{
	// CU_USER_OBJECT_NO_DESTRUCTOR_SYNC (1) is the only flag the driver accepts.
	return gccl_cuUserObjectCreate(o, (void *)handle, host_trampoline, 1, 1);
}

CUresult gccl_pointer_get_attributes(unsigned int n, int *attrs, unsigned long long *slots, CUdeviceptr p)
{
	void *data[32];
	if (n > 32)
		return 1;
	for (unsigned int i = 0; i < n; i++) {
		slots[i] = 0;
		data[i] = &slots[i];
	}
	return gccl_cuPointerGetAttributes(n, attrs, data, p);
}
