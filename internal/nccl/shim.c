// The dlopen boundary of the NCCL baseline: libnccl.so.2 is opened at run
// time and every symbol of nccl_shim.h is found with dlsym. Nothing here is
// linked against NCCL or CUDA.
#include "shim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define GCCL_NCCL_PFN(sym, req, params, args) static ncclResult_t(*pfn_##sym) params;
GCCL_NCCL_FUNCS(GCCL_NCCL_PFN)
#undef GCCL_NCCL_PFN

static const char *(*pfn_ncclGetErrorString)(ncclResult_t);
static const char *(*pfn_ncclGetLastError)(ncclComm_t);

#define GCCL_NCCL_WRAP(sym, req, params, args) \
	ncclResult_t gccl_##sym params \
	{ \
		if (pfn_##sym == NULL) \
			return GCCL_NCCL_SYMBOL_MISSING; \
		return pfn_##sym args; \
	}
GCCL_NCCL_FUNCS(GCCL_NCCL_WRAP)
#undef GCCL_NCCL_WRAP

const char *gccl_ncclGetErrorString(ncclResult_t r)
{
	const char *s = pfn_ncclGetErrorString ? pfn_ncclGetErrorString(r) : NULL;
	return s ? s : "";
}

const char *gccl_ncclGetLastError(ncclComm_t c)
{
	const char *s = pfn_ncclGetLastError ? pfn_ncclGetLastError(c) : NULL;
	return s ? s : "";
}

static const struct {
	const char *sym;
	int required;
	void **pfn;
} table[] = {
#define GCCL_NCCL_ENTRY(sym, req, params, args) {#sym, req, (void **)&pfn_##sym},
	GCCL_NCCL_FUNCS(GCCL_NCCL_ENTRY)
#undef GCCL_NCCL_ENTRY
	{"ncclGetErrorString", 1, (void **)&pfn_ncclGetErrorString},
	{"ncclGetLastError", 0, (void **)&pfn_ncclGetLastError},
};

#define GCCL_NCCL_NSYMS (sizeof(table) / sizeof(table[0]))

static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;

int gccl_nccl_load(const char *name, char *err, int errlen)
{
	void *found[GCCL_NCCL_NSYMS];
	void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : "dlopen failed");
		return 1;
	}
	for (size_t i = 0; i < GCCL_NCCL_NSYMS; i++) {
		found[i] = dlsym(lib, table[i].sym);
		if (found[i] == NULL && table[i].required) {
			snprintf(err, errlen, "%s does not export %s; it is not NCCL 2.7 or later", name, table[i].sym);
			dlclose(lib);
			return 2;
		}
	}
	pthread_mutex_lock(&load_mu);
	for (size_t i = 0; i < GCCL_NCCL_NSYMS; i++)
		*table[i].pfn = found[i];
	pthread_mutex_unlock(&load_mu);
	return 0;
}

int gccl_nccl_has(const char *sym)
{
	for (size_t i = 0; i < GCCL_NCCL_NSYMS; i++)
		if (strcmp(table[i].sym, sym) == 0)
			return *table[i].pfn != NULL;
	return 0;
}

static ncclResult_t issue(const gccl_nccl_op *o)
{
	switch (o->kind) {
	case GCCL_NCCL_OP_ALLREDUCE:
		return gccl_ncclAllReduce(o->send, o->recv, o->count, o->dtype, o->op, o->comm, o->stream);
	case GCCL_NCCL_OP_BROADCAST:
		return gccl_ncclBroadcast(o->send, o->recv, o->count, o->dtype, o->root, o->comm, o->stream);
	case GCCL_NCCL_OP_REDUCE:
		return gccl_ncclReduce(o->send, o->recv, o->count, o->dtype, o->op, o->root, o->comm, o->stream);
	case GCCL_NCCL_OP_ALLGATHER:
		return gccl_ncclAllGather(o->send, o->recv, o->count, o->dtype, o->comm, o->stream);
	case GCCL_NCCL_OP_REDUCESCATTER:
		return gccl_ncclReduceScatter(o->send, o->recv, o->count, o->dtype, o->op, o->comm, o->stream);
	case GCCL_NCCL_OP_SEND:
		return gccl_ncclSend(o->send, o->count, o->dtype, o->root, o->comm, o->stream);
	case GCCL_NCCL_OP_RECV:
		return gccl_ncclRecv(o->recv, o->count, o->dtype, o->root, o->comm, o->stream);
	}
	return GCCL_NCCL_BAD_OP;
}

ncclResult_t gccl_nccl_launch(const gccl_nccl_op *ops, int n, int grouped, int *issued)
{
	ncclResult_t r = 0;
	*issued = 0;
	if (grouped && (r = gccl_ncclGroupStart()) != 0)
		return r;
	for (int i = 0; i < n && r == 0; i++) {
		r = issue(&ops[i]);
		if (r == 0)
			(*issued)++;
	}
	if (grouped) {
		ncclResult_t e = gccl_ncclGroupEnd();
		if (r == 0)
			r = e;
	}
	return r;
}
