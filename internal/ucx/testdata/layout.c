// Prints the offsets of every field gccl sets in UCP's parameter structs,
// from UCX's own headers (-DREAL) or from shim.c's declarations: the test
// compares the two outputs.
#ifdef REAL
#include <ucp/api/ucp.h>
#define MEMTYPE ucs_memory_type_t
#else
#include "../shim.c"
#define MEMTYPE int
#endif
#include <stddef.h>
#include <stdio.h>

#define P(t, f) printf("%s.%s %zu\n", #t, #f, offsetof(t, f))
#define S(t) printf("sizeof %s %zu\n", #t, sizeof(t))

int main(void)
{
	P(ucp_params_t, features), P(ucp_params_t, mt_workers_shared), P(ucp_params_t, name), S(ucp_params_t);
	P(ucp_context_attr_t, memory_types);
	P(ucp_worker_params_t, thread_mode), P(ucp_worker_params_t, events), P(ucp_worker_params_t, client_id);
	P(ucp_ep_params_t, address), P(ucp_ep_params_t, err_mode), P(ucp_ep_params_t, err_handler);
	P(ucp_ep_params_t, flags), P(ucp_ep_params_t, sockaddr), P(ucp_ep_params_t, conn_request);
	P(ucp_ep_params_t, local_sockaddr), S(ucp_ep_params_t);
	P(ucp_request_param_t, op_attr_mask), P(ucp_request_param_t, flags), P(ucp_request_param_t, request);
	P(ucp_request_param_t, cb), P(ucp_request_param_t, datatype), P(ucp_request_param_t, user_data);
	P(ucp_request_param_t, reply_buffer), P(ucp_request_param_t, memory_type);
	P(ucp_request_param_t, recv_info), P(ucp_request_param_t, memh), S(ucp_request_param_t);
	P(ucp_mem_map_params_t, address), P(ucp_mem_map_params_t, length), P(ucp_mem_map_params_t, flags);
	P(ucp_mem_map_params_t, prot), P(ucp_mem_map_params_t, memory_type);
	P(ucp_tag_recv_info_t, length), S(ucp_tag_recv_info_t);
	printf("sizeof ucs_status_t %zu\n", sizeof(ucs_status_t));
	printf("sizeof memory type %zu\n", sizeof(MEMTYPE));
	return 0;
}
