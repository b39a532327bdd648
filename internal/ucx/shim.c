// The dlopen boundary: libucp.so.0 is opened at run time and every entry
// point is found with dlsym (libucs's, such as ucs_status_string, through
// libucp's dependencies). Nothing here is linked against UCX and no UCX
// header is included: the structs below are our own declarations of the
// UCP 1.x ABI (see shim.h).
#include "shim.h"

#include <dlfcn.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define BIT(i) (1ull << (i))

// ucp_params_t and its field bits (UCP_PARAM_FIELD_*, UCP_FEATURE_*).
typedef struct {
	uint64_t field_mask;
	uint64_t features;
	size_t request_size;
	void (*request_init)(void *);
	void (*request_cleanup)(void *);
	uint64_t tag_sender_mask;
	int mt_workers_shared;
	size_t estimated_num_eps;
	size_t estimated_num_ppn;
	const char *name;
} ucp_params_t;
#define PARAM_FIELD_FEATURES BIT(0)
#define PARAM_FIELD_MT_WORKERS_SHARED BIT(5)
#define PARAM_FIELD_NAME BIT(8)
#define FEATURE_TAG BIT(0)
#define FEATURE_RMA BIT(1)
#define FEATURE_WAKEUP BIT(4)

// ucp_context_attr_t
typedef struct {
	uint64_t field_mask;
	size_t request_size;
	int thread_mode;
	uint64_t memory_types;
	char name[32];
} ucp_context_attr_t;
#define ATTR_FIELD_MEMORY_TYPES BIT(2)

// ucp_worker_params_t (ucs_cpu_set_t is 1024 bits)
typedef struct {
	uint64_t field_mask;
	int thread_mode;
	struct {
		unsigned long bits[1024 / (8 * sizeof(unsigned long))];
	} cpu_mask;
	unsigned events;
	void *user_data;
	int event_fd;
	uint64_t flags;
	const char *name;
	size_t am_alignment;
	uint64_t client_id;
} ucp_worker_params_t;
#define WORKER_PARAM_FIELD_THREAD_MODE BIT(0)
#define THREAD_MODE_SERIALIZED 1

// ucp_ep_params_t
typedef struct {
	void (*cb)(void *arg, void *ep, ucs_status_t status);
	void *arg;
} ucp_err_handler_t;
typedef struct {
	const struct sockaddr *addr;
	socklen_t addrlen;
} ucs_sock_addr_t;
typedef struct {
	uint64_t field_mask;
	const void *address;
	int err_mode;
	ucp_err_handler_t err_handler;
	void *user_data;
	unsigned flags;
	ucs_sock_addr_t sockaddr;
	void *conn_request;
	const char *name;
	ucs_sock_addr_t local_sockaddr;
} ucp_ep_params_t;
#define EP_PARAM_FIELD_REMOTE_ADDRESS BIT(0)
#define EP_PARAM_FIELD_ERR_HANDLING_MODE BIT(1)
#define EP_PARAM_FIELD_ERR_HANDLER BIT(2)
#define ERR_HANDLING_MODE_PEER 1

// ucp_request_param_t (the nbx calls' parameters)
typedef struct {
	uint64_t sender_tag;
	size_t length;
} ucp_tag_recv_info_t;
typedef struct {
	uint32_t op_attr_mask;
	uint32_t flags;
	void *request;
	void *cb;
	uint64_t datatype;
	void *user_data;
	void *reply_buffer;
	int memory_type;
	union {
		size_t *length;
		ucp_tag_recv_info_t *tag_info;
	} recv_info;
	void *memh;
} ucp_request_param_t;
#define OP_ATTR_FIELD_FLAGS BIT(4)
#define OP_ATTR_FIELD_MEMORY_TYPE BIT(6)
#define OP_ATTR_FIELD_RECV_INFO BIT(7)
#define OP_ATTR_FIELD_MEMH BIT(8)
#define OP_ATTR_FLAG_NO_IMM_CMPL BIT(16)
#define EP_CLOSE_FLAG_FORCE BIT(0)

// ucp_mem_map_params_t
typedef struct {
	uint64_t field_mask;
	void *address;
	size_t length;
	unsigned flags;
	unsigned prot;
	int memory_type;
} ucp_mem_map_params_t;
#define MEM_MAP_PARAM_FIELD_ADDRESS BIT(0)
#define MEM_MAP_PARAM_FIELD_LENGTH BIT(1)
#define MEM_MAP_PARAM_FIELD_MEMORY_TYPE BIT(4)

// The UCP API version we ask for: 1.10 has every call and field bit above.
#define API_MAJOR 1
#define API_MINOR 10

#define UCX_FUNCS(X) \
	X(ucp_get_version, void, (unsigned *, unsigned *, unsigned *)) \
	X(ucs_status_string, const char *, (ucs_status_t)) \
	X(ucp_config_read, ucs_status_t, (const char *, const char *, void **)) \
	X(ucp_config_modify, ucs_status_t, (void *, const char *, const char *)) \
	X(ucp_config_release, void, (void *)) \
	X(ucp_init_version, ucs_status_t, (unsigned, unsigned, const ucp_params_t *, const void *, void **)) \
	X(ucp_cleanup, void, (void *)) \
	X(ucp_context_query, ucs_status_t, (void *, ucp_context_attr_t *)) \
	X(ucp_context_print_info, void, (void *, FILE *)) \
	X(ucp_worker_create, ucs_status_t, (void *, const ucp_worker_params_t *, void **)) \
	X(ucp_worker_destroy, void, (void *)) \
	X(ucp_worker_get_address, ucs_status_t, (void *, void **, size_t *)) \
	X(ucp_worker_release_address, void, (void *, void *)) \
	X(ucp_worker_progress, unsigned, (void *)) \
	X(ucp_worker_get_efd, ucs_status_t, (void *, int *)) \
	X(ucp_worker_arm, ucs_status_t, (void *)) \
	X(ucp_worker_signal, ucs_status_t, (void *)) \
	X(ucp_ep_create, ucs_status_t, (void *, const ucp_ep_params_t *, void **)) \
	X(ucp_ep_close_nbx, void *, (void *, const ucp_request_param_t *)) \
	X(ucp_ep_flush_nbx, void *, (void *, const ucp_request_param_t *)) \
	X(ucp_worker_flush_nbx, void *, (void *, const ucp_request_param_t *)) \
	X(ucp_tag_send_nbx, void *, (void *, const void *, size_t, uint64_t, const ucp_request_param_t *)) \
	X(ucp_tag_recv_nbx, void *, (void *, void *, size_t, uint64_t, uint64_t, const ucp_request_param_t *)) \
	X(ucp_request_check_status, ucs_status_t, (void *)) \
	X(ucp_tag_recv_request_test, ucs_status_t, (void *, ucp_tag_recv_info_t *)) \
	X(ucp_request_cancel, void, (void *, void *)) \
	X(ucp_request_free, void, (void *)) \
	X(ucp_mem_map, ucs_status_t, (void *, const ucp_mem_map_params_t *, void **)) \
	X(ucp_mem_unmap, ucs_status_t, (void *, void *)) \
	X(ucp_rkey_pack, ucs_status_t, (void *, void *, void **, size_t *)) \
	X(ucp_rkey_buffer_release, void, (void *)) \
	X(ucp_ep_rkey_unpack, ucs_status_t, (void *, const void *, void **)) \
	X(ucp_rkey_destroy, void, (void *)) \
	X(ucp_get_nbx, void *, (void *, void *, size_t, uint64_t, void *, const ucp_request_param_t *))

#define PFN(name, ret, params) static ret(*p_##name) params;
UCX_FUNCS(PFN)
#undef PFN

int gccl_ucx_load(const char *name, char *err, int errlen)
{
	void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : "dlopen failed");
		return -1;
	}
#define SYM(fn, ret, params) \
	p_##fn = (ret(*) params)dlsym(lib, #fn); \
	if (p_##fn == NULL) { \
		snprintf(err, errlen, "%s has no %s (UCX older than 1.10?)", name, #fn); \
		dlclose(lib); \
		return -1; \
	}
	UCX_FUNCS(SYM)
#undef SYM
	return 0;
}

void gccl_ucx_version(unsigned *major, unsigned *minor, unsigned *release)
{
	p_ucp_get_version(major, minor, release);
}

const char *gccl_ucx_status_string(int status)
{
	switch (status) {
	case GCCL_UCX_ERR_NOT_LOADED:
		return "libucp.so.0 is not loaded";
	case GCCL_UCX_ERR_NO_SYMBOL:
		return "not exported by this libucp";
	}
	return p_ucs_status_string((ucs_status_t)status);
}

// status_of decodes a ucs_status_ptr_t: *req gets the request, or 0.
static int status_of(void *p, uintptr_t *req)
{
	uintptr_t v = (uintptr_t)p;
	*req = 0;
	if (v == 0)
		return GCCL_UCS_OK;
	if (v >= (uintptr_t)(intptr_t)GCCL_UCS_ERR_LAST)
		return (int)(intptr_t)v;
	*req = v;
	return GCCL_UCS_INPROGRESS;
}

int gccl_ucx_init(const char *mods, uintptr_t *ctx, char *err, int errlen)
{
	void *config = NULL;
	ucs_status_t s = p_ucp_config_read(NULL, NULL, &config);
	if (s != GCCL_UCS_OK) {
		snprintf(err, errlen, "ucp_config_read: %s", p_ucs_status_string(s));
		return s;
	}
	for (const char *m = mods; *m != '\0';) {
		const char *v = m + strlen(m) + 1;
		// A name starting with '?' is a setting this UCX may not know:
		// where ucp_config_modify refuses it, it is left out.
		int optional = *m == '?';
		s = p_ucp_config_modify(config, m + optional, v);
		if (s != GCCL_UCS_OK && optional) {
			m = v + strlen(v) + 1;
			continue;
		}
		if (s != GCCL_UCS_OK) {
			snprintf(err, errlen, "ucp_config_modify(%s=%s): %s", m, v, p_ucs_status_string(s));
			p_ucp_config_release(config);
			return s;
		}
		m = v + strlen(v) + 1;
	}
	ucp_params_t params;
	memset(&params, 0, sizeof(params));
	params.field_mask = PARAM_FIELD_FEATURES | PARAM_FIELD_MT_WORKERS_SHARED | PARAM_FIELD_NAME;
	params.features = FEATURE_TAG | FEATURE_RMA | FEATURE_WAKEUP;
	params.mt_workers_shared = 1;
	params.name = "gccl";
	void *c = NULL;
	s = p_ucp_init_version(API_MAJOR, API_MINOR, &params, config, &c);
	p_ucp_config_release(config);
	if (s != GCCL_UCS_OK) {
		snprintf(err, errlen, "ucp_init: %s", p_ucs_status_string(s));
		return s;
	}
	*ctx = (uintptr_t)c;
	return 0;
}

void gccl_ucx_cleanup(uintptr_t ctx) { p_ucp_cleanup((void *)ctx); }

int gccl_ucx_memory_types(uintptr_t ctx, uint64_t *types)
{
	ucp_context_attr_t attr;
	memset(&attr, 0, sizeof(attr));
	attr.field_mask = ATTR_FIELD_MEMORY_TYPES;
	ucs_status_t s = p_ucp_context_query((void *)ctx, &attr);
	*types = attr.memory_types;
	return s;
}

int gccl_ucx_context_info(uintptr_t ctx, char *buf, int len)
{
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);
	if (f == NULL)
		return -1;
	p_ucp_context_print_info((void *)ctx, f);
	fclose(f);
	if ((size_t)len > n) {
		memcpy(buf, out, n);
		buf[n] = '\0';
	}
	free(out);
	return (int)n + 1;
}

int gccl_ucx_worker_create(uintptr_t ctx, uintptr_t *worker)
{
	ucp_worker_params_t params;
	memset(&params, 0, sizeof(params));
	params.field_mask = WORKER_PARAM_FIELD_THREAD_MODE;
	params.thread_mode = THREAD_MODE_SERIALIZED; // gccl serialises each worker's calls with a mutex
	void *w = NULL;
	ucs_status_t s = p_ucp_worker_create((void *)ctx, &params, &w);
	*worker = (uintptr_t)w;
	return s;
}

void gccl_ucx_worker_destroy(uintptr_t worker) { p_ucp_worker_destroy((void *)worker); }

int gccl_ucx_worker_address(uintptr_t worker, char *buf, int len, int *needed)
{
	void *addr = NULL;
	size_t n = 0;
	ucs_status_t s = p_ucp_worker_get_address((void *)worker, &addr, &n);
	if (s != GCCL_UCS_OK)
		return s;
	*needed = (int)n;
	if (n <= (size_t)len)
		memcpy(buf, addr, n);
	p_ucp_worker_release_address((void *)worker, addr);
	return 0;
}

unsigned gccl_ucx_progress(uintptr_t worker) { return p_ucp_worker_progress((void *)worker); }

int gccl_ucx_event_fd(uintptr_t worker, int *fd) { return p_ucp_worker_get_efd((void *)worker, fd); }

gccl_ucx_result gccl_ucx_arm(uintptr_t worker)
{
	gccl_ucx_result r = {0, 0, 0};
	int fd = -1;
	r.status = p_ucp_worker_get_efd((void *)worker, &fd);
	r.n = fd;
	if (r.status != GCCL_UCS_OK)
		return r;
	// Events this progress handles may complete what the caller's
	// caller waits for: report them, do not sleep over them.
	if (p_ucp_worker_progress((void *)worker) != 0) {
		r.status = GCCL_UCS_INPROGRESS;
		return r;
	}
	r.status = p_ucp_worker_arm((void *)worker);
	if (r.status == GCCL_UCS_ERR_BUSY)
		r.status = GCCL_UCS_INPROGRESS; // events arrived meanwhile: progress again, do not sleep
	if (r.status != GCCL_UCS_OK)
		return r;
	// Armed. Still readable (an event the progress left queued)? Then a
	// sleeper woken only by new events (an edge-triggered netpoller)
	// would miss it: do not sleep.
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, 0) > 0)
		r.status = GCCL_UCS_INPROGRESS;
	return r;
}

int gccl_ucx_signal(uintptr_t worker) { return p_ucp_worker_signal((void *)worker); }

void gccl_ucx_poll(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	poll(&p, 1, timeout_ms);
}

// An endpoint and the status its error handler recorded.
struct ep {
	void *ep;
	volatile int status;
};

static void ep_failed(void *arg, void *ep, ucs_status_t status)
{
	(void)ep;
	((struct ep *)arg)->status = status;
}

int gccl_ucx_ep_create(uintptr_t worker, const void *addr, uintptr_t *out)
{
	struct ep *e = calloc(1, sizeof(*e));
	if (e == NULL)
		return -4; // UCS_ERR_NO_MEMORY
	ucp_ep_params_t params;
	memset(&params, 0, sizeof(params));
	params.field_mask = EP_PARAM_FIELD_REMOTE_ADDRESS | EP_PARAM_FIELD_ERR_HANDLING_MODE | EP_PARAM_FIELD_ERR_HANDLER;
	params.address = addr;
	params.err_mode = ERR_HANDLING_MODE_PEER;
	params.err_handler.cb = ep_failed;
	params.err_handler.arg = e;
	ucs_status_t s = p_ucp_ep_create((void *)worker, &params, &e->ep);
	if (s != GCCL_UCS_OK) {
		free(e);
		return s;
	}
	*out = (uintptr_t)e;
	return 0;
}

int gccl_ucx_ep_status(uintptr_t ep) { return ((struct ep *)ep)->status; }

int gccl_ucx_ep_close(uintptr_t ep, int force, uintptr_t *req)
{
	ucp_request_param_t param;
	memset(&param, 0, sizeof(param));
	param.op_attr_mask = OP_ATTR_FIELD_FLAGS;
	param.flags = force ? EP_CLOSE_FLAG_FORCE : 0;
	return status_of(p_ucp_ep_close_nbx(((struct ep *)ep)->ep, &param), req);
}

int gccl_ucx_ep_flush(uintptr_t ep, uintptr_t *req)
{
	ucp_request_param_t param;
	memset(&param, 0, sizeof(param));
	return status_of(p_ucp_ep_flush_nbx(((struct ep *)ep)->ep, &param), req);
}

int gccl_ucx_worker_flush(uintptr_t worker, uintptr_t *req)
{
	ucp_request_param_t param;
	memset(&param, 0, sizeof(param));
	return status_of(p_ucp_worker_flush_nbx((void *)worker, &param), req);
}

void gccl_ucx_ep_free(uintptr_t ep) { free((struct ep *)ep); }

static void op_param(ucp_request_param_t *param, uintptr_t memh, int cuda)
{
	memset(param, 0, sizeof(*param));
	param->op_attr_mask = OP_ATTR_FIELD_MEMORY_TYPE;
	param->memory_type = cuda ? GCCL_UCS_MEMORY_TYPE_CUDA : GCCL_UCS_MEMORY_TYPE_HOST;
	if (memh != 0) {
		param->op_attr_mask |= OP_ATTR_FIELD_MEMH; // UCX before 1.13 ignores it
		param->memh = (void *)memh;
	}
}

gccl_ucx_result gccl_ucx_tag_send(uintptr_t ep, void *buf, size_t n, uint64_t tag, uintptr_t memh, int cuda)
{
	gccl_ucx_result r = {0, 0, 0};
	ucp_request_param_t param;
	op_param(&param, memh, cuda);
	r.status = status_of(p_ucp_tag_send_nbx(((struct ep *)ep)->ep, buf, n, tag, &param), &r.req);
	return r;
}

gccl_ucx_result gccl_ucx_tag_recv(uintptr_t worker, void *buf, size_t n, uint64_t tag, uintptr_t memh, int cuda)
{
	gccl_ucx_result r = {0, 0, 0};
	ucp_tag_recv_info_t info = {0, 0};
	ucp_request_param_t param;
	op_param(&param, memh, cuda);
	// A receive matched at once (an unexpected message already here) would
	// complete without a request; UCX 1.13 then leaves recv_info unset, so
	// ask for a request always and read the length from it.
	param.op_attr_mask |= OP_ATTR_FIELD_RECV_INFO | OP_ATTR_FLAG_NO_IMM_CMPL;
	param.recv_info.tag_info = &info;
	r.status = status_of(p_ucp_tag_recv_nbx((void *)worker, buf, n, tag, ~(uint64_t)0, &param), &r.req);
	r.n = info.length;
	return r;
}

int gccl_ucx_request_status(uintptr_t req) { return p_ucp_request_check_status((void *)req); }

int gccl_ucx_recv_status(uintptr_t req, size_t *len)
{
	ucp_tag_recv_info_t info = {0, 0};
	ucs_status_t s = p_ucp_tag_recv_request_test((void *)req, &info);
	*len = info.length;
	return s;
}

gccl_ucx_result gccl_ucx_test(uintptr_t worker, uintptr_t req, int recv)
{
	gccl_ucx_result r = {0, req, 0};
	for (;;) {
		unsigned events = p_ucp_worker_progress((void *)worker);
		r.status = recv ? gccl_ucx_recv_status(req, &r.n) : gccl_ucx_request_status(req);
		if (r.status != GCCL_UCS_INPROGRESS || events == 0)
			return r;
	}
}

void gccl_ucx_request_cancel(uintptr_t worker, uintptr_t req) { p_ucp_request_cancel((void *)worker, (void *)req); }

void gccl_ucx_request_free(uintptr_t req) { p_ucp_request_free((void *)req); }

int gccl_ucx_mem_map(uintptr_t ctx, void *addr, size_t n, int cuda, uintptr_t *memh)
{
	ucp_mem_map_params_t params;
	memset(&params, 0, sizeof(params));
	params.field_mask = MEM_MAP_PARAM_FIELD_ADDRESS | MEM_MAP_PARAM_FIELD_LENGTH | MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
	params.address = addr;
	params.length = n;
	params.memory_type = cuda ? GCCL_UCS_MEMORY_TYPE_CUDA : GCCL_UCS_MEMORY_TYPE_HOST;
	void *m = NULL;
	ucs_status_t s = p_ucp_mem_map((void *)ctx, &params, &m);
	*memh = (uintptr_t)m;
	return s;
}

int gccl_ucx_mem_unmap(uintptr_t ctx, uintptr_t memh) { return p_ucp_mem_unmap((void *)ctx, (void *)memh); }

int gccl_ucx_read_back(uintptr_t ctx, uintptr_t ep, uintptr_t memh, void *addr, void *dst, uintptr_t *req,
		       uintptr_t *rkey)
{
	void *packed = NULL;
	size_t n = 0;
	*req = 0;
	*rkey = 0;
	ucs_status_t s = p_ucp_rkey_pack((void *)ctx, (void *)memh, &packed, &n);
	if (s != GCCL_UCS_OK)
		return s;
	void *rk = NULL;
	s = p_ucp_ep_rkey_unpack(((struct ep *)ep)->ep, packed, &rk);
	p_ucp_rkey_buffer_release(packed);
	if (s != GCCL_UCS_OK)
		return s;
	*rkey = (uintptr_t)rk;
	ucp_request_param_t param;
	memset(&param, 0, sizeof(param));
	return status_of(p_ucp_get_nbx(((struct ep *)ep)->ep, dst, 1, (uint64_t)(uintptr_t)addr, rk, &param), req);
}

void gccl_ucx_rkey_destroy(uintptr_t rkey) { p_ucp_rkey_destroy((void *)rkey); }
