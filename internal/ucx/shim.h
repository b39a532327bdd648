// Our own declarations of the subset of UCX's UCP ABI that gccl uses. This
// is not ucp.h: it declares only what gccl calls, laid out as the UCP 1.x
// ABI lays them out (checked against UCX 1.13's headers; every parameter
// struct is versioned by its field_mask, so a library older or newer than
// 1.13 reads only the fields whose bits we set, and the bits we use exist
// since UCX 1.10). The package builds with no UCX headers installed.
//
// Handles (contexts, workers, endpoints, requests, memory handles, rkeys)
// are pointers in the real ABI. The shim's functions take and return them
// as uintptr_t so that Go holds them as plain integers.
#ifndef GCCL_UCX_SHIM_H
#define GCCL_UCX_SHIM_H

#include <stddef.h>
#include <stdint.h>

// ucs_status_t is a packed enum in the real ABI (UCS_S_PACKED): one signed
// byte, returned in the low byte of the return register. Declaring it as
// int would read garbage in the upper bytes.
typedef int8_t ucs_status_t;

// ucs_status_t values gccl looks at.
#define GCCL_UCS_OK 0
#define GCCL_UCS_INPROGRESS 1
#define GCCL_UCS_ERR_NO_MESSAGE -1
#define GCCL_UCS_ERR_NO_RESOURCE -2
#define GCCL_UCS_ERR_INVALID_PARAM -5
#define GCCL_UCS_ERR_MESSAGE_TRUNCATED -9
#define GCCL_UCS_ERR_BUSY -15
#define GCCL_UCS_ERR_CANCELED -16
#define GCCL_UCS_ERR_LAST -100
// Results the shim makes up itself.
#define GCCL_UCX_ERR_NOT_LOADED -120
#define GCCL_UCX_ERR_NO_SYMBOL -121

// What the calls on the per-message path return: by value, so that Go
// passes them no pointer (one passed to C escapes to the heap, an
// allocation per call). status is a ucs_status_t; req a request (0 when
// the operation completed at once); n a length or a file descriptor.
typedef struct {
	int status;
	uintptr_t req;
	size_t n;
} gccl_ucx_result;

// ucs_memory_type_t
#define GCCL_UCS_MEMORY_TYPE_HOST 0
#define GCCL_UCS_MEMORY_TYPE_CUDA 1

// Opens the library called name (libucp.so.0) and resolves every entry
// point (package ucx calls it once).
int gccl_ucx_load(const char *name, char *err, int errlen);
void gccl_ucx_version(unsigned *major, unsigned *minor, unsigned *release);
const char *gccl_ucx_status_string(int status);

// Contexts: config is read from the environment (UCX_*), then each
// name=value pair of mods (NUL-separated, ending with an empty name) is
// applied with ucp_config_modify; a name starting with '?' is optional
// (left out where this UCX does not know it).
int gccl_ucx_init(const char *mods, uintptr_t *ctx, char *err, int errlen);
void gccl_ucx_cleanup(uintptr_t ctx);
int gccl_ucx_memory_types(uintptr_t ctx, uint64_t *types);
// Prints ucp_context_print_info into buf; returns the length it needed.
int gccl_ucx_context_info(uintptr_t ctx, char *buf, int len);

int gccl_ucx_worker_create(uintptr_t ctx, uintptr_t *worker);
void gccl_ucx_worker_destroy(uintptr_t worker);
int gccl_ucx_worker_address(uintptr_t worker, char *buf, int len, int *needed);
unsigned gccl_ucx_progress(uintptr_t worker);
// The worker's event fd (ucp_worker_get_efd).
int gccl_ucx_event_fd(uintptr_t worker, int *fd);
// Progresses the worker and, when that handled nothing, arms its wakeup
// (ucp_worker_arm); n is its event fd, to poll. UCS_INPROGRESS: the
// progress handled events, or events came meanwhile, or the fd is
// readable still: do not sleep.
gccl_ucx_result gccl_ucx_arm(uintptr_t worker);
// Wakes a poll on the worker's event fd (ucp_worker_signal).
int gccl_ucx_signal(uintptr_t worker);
// Sleeps until fd is readable or timeout_ms pass.
void gccl_ucx_poll(int fd, int timeout_ms);

// Endpoints carry their own error status, set by UCX's error handler.
int gccl_ucx_ep_create(uintptr_t worker, const void *addr, uintptr_t *ep);
int gccl_ucx_ep_status(uintptr_t ep);
// Starts closing ep (flushing unless force); *req is 0 when already done.
int gccl_ucx_ep_close(uintptr_t ep, int force, uintptr_t *req);
// Starts flushing ep (ucp_ep_flush_nbx): done once every operation posted
// on it, and its wire-up, completed.
int gccl_ucx_ep_flush(uintptr_t ep, uintptr_t *req);
void gccl_ucx_ep_free(uintptr_t ep);
// Starts flushing every endpoint of the worker (ucp_worker_flush_nbx),
// the ones UCX made for peers' wire-up included.
int gccl_ucx_worker_flush(uintptr_t worker, uintptr_t *req);

// Requests: req is 0 when the operation completed at once (then n holds
// the received length for receives).
gccl_ucx_result gccl_ucx_tag_send(uintptr_t ep, void *buf, size_t n, uint64_t tag, uintptr_t memh, int cuda);
gccl_ucx_result gccl_ucx_tag_recv(uintptr_t worker, void *buf, size_t n, uint64_t tag, uintptr_t memh, int cuda);
int gccl_ucx_request_status(uintptr_t req);
int gccl_ucx_recv_status(uintptr_t req, size_t *len);
// Progresses the worker until req (a receive when recv) is done or the
// worker is idle, at least once; returns req's status (and a receive's
// length in n), all in one call from Go.
gccl_ucx_result gccl_ucx_test(uintptr_t worker, uintptr_t req, int recv);
void gccl_ucx_request_cancel(uintptr_t worker, uintptr_t req);
void gccl_ucx_request_free(uintptr_t req);

int gccl_ucx_mem_map(uintptr_t ctx, void *addr, size_t n, int cuda, uintptr_t *memh);
int gccl_ucx_mem_unmap(uintptr_t ctx, uintptr_t memh);

// A one-byte RDMA read of addr (registered as memh) through ep into dst:
// the GPUDirect flush NCCL's UCX plugin does.
// The rkey must be released (gccl_ucx_rkey_destroy) once the read is done.
int gccl_ucx_read_back(uintptr_t ctx, uintptr_t ep, uintptr_t memh, void *addr, void *dst, uintptr_t *req,
		       uintptr_t *rkey);
void gccl_ucx_rkey_destroy(uintptr_t rkey);

#endif
