//go:build cgo

package ucx

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"unsafe"
)

// The calls into shim.c. Each returns a ucs_status_t as a Status; handles
// are uintptrs (see shim.h).

func cLoad(name string) (string, bool) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var buf [512]C.char
	if C.gccl_ucx_load(cs, &buf[0], C.int(len(buf))) != 0 {
		return C.GoString(&buf[0]), false
	}
	return "", true
}

func cVersion() (major, minor, release uint) {
	var a, b, c C.uint
	C.gccl_ucx_version(&a, &b, &c)
	return uint(a), uint(b), uint(c)
}

func cStatusString(s Status) string { return C.GoString(C.gccl_ucx_status_string(C.int(s))) }

// cInit creates a context; mods are name, value pairs for ucp_config_modify.
func cInit(mods []string) (uintptr, Status, string) {
	var b []byte
	for _, m := range mods {
		b = append(append(b, m...), 0)
	}
	b = append(b, 0, 0)
	cs := C.CBytes(b)
	defer C.free(cs)
	var buf [512]C.char
	var h C.uintptr_t
	s := Status(C.gccl_ucx_init((*C.char)(cs), &h, &buf[0], C.int(len(buf))))
	return uintptr(h), s, C.GoString(&buf[0])
}

func cCleanup(ctx uintptr) { C.gccl_ucx_cleanup(C.uintptr_t(ctx)) }

func cMemoryTypes(ctx uintptr) (uint64, Status) {
	var t C.uint64_t
	s := Status(C.gccl_ucx_memory_types(C.uintptr_t(ctx), &t))
	return uint64(t), s
}

func cContextInfo(ctx uintptr) string {
	buf := make([]byte, 4096)
	for {
		n := int(C.gccl_ucx_context_info(C.uintptr_t(ctx), (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf))))
		if n < 0 {
			return ""
		}
		if n <= len(buf) {
			return string(buf[:n-1])
		}
		buf = make([]byte, n)
	}
}

func cWorkerCreate(ctx uintptr) (uintptr, Status) {
	var w C.uintptr_t
	s := Status(C.gccl_ucx_worker_create(C.uintptr_t(ctx), &w))
	return uintptr(w), s
}

func cWorkerDestroy(w uintptr) { C.gccl_ucx_worker_destroy(C.uintptr_t(w)) }

func cWorkerAddress(w uintptr) ([]byte, Status) {
	buf := make([]byte, 1024)
	for {
		var need C.int
		s := Status(C.gccl_ucx_worker_address(C.uintptr_t(w), (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)), &need))
		if s != OK {
			return nil, s
		}
		if int(need) <= len(buf) {
			return buf[:need], OK
		}
		buf = make([]byte, need)
	}
}

func cProgress(w uintptr) uint { return uint(C.gccl_ucx_progress(C.uintptr_t(w))) }

func cEventFd(w uintptr) (int, Status) {
	var fd C.int
	s := Status(C.gccl_ucx_event_fd(C.uintptr_t(w), &fd))
	return int(fd), s
}

func cArm(w uintptr) (int, Status) {
	r := C.gccl_ucx_arm(C.uintptr_t(w))
	return int(r.n), Status(r.status)
}

func cSignal(w uintptr) Status { return Status(C.gccl_ucx_signal(C.uintptr_t(w))) }

func cPoll(fd, ms int) { C.gccl_ucx_poll(C.int(fd), C.int(ms)) }

func cEpCreate(w uintptr, addr []byte) (uintptr, Status) {
	ca := C.CBytes(addr)
	defer C.free(ca)
	var ep C.uintptr_t
	s := Status(C.gccl_ucx_ep_create(C.uintptr_t(w), ca, &ep))
	return uintptr(ep), s
}

func cEpStatus(ep uintptr) Status { return Status(C.gccl_ucx_ep_status(C.uintptr_t(ep))) }

func cEpClose(ep uintptr, force bool) (uintptr, Status) {
	var req C.uintptr_t
	f := C.int(0)
	if force {
		f = 1
	}
	s := Status(C.gccl_ucx_ep_close(C.uintptr_t(ep), f, &req))
	return uintptr(req), s
}

func cEpFlush(ep uintptr) (uintptr, Status) {
	var req C.uintptr_t
	s := Status(C.gccl_ucx_ep_flush(C.uintptr_t(ep), &req))
	return uintptr(req), s
}

func cWorkerFlush(w uintptr) (uintptr, Status) {
	var req C.uintptr_t
	s := Status(C.gccl_ucx_worker_flush(C.uintptr_t(w), &req))
	return uintptr(req), s
}

func cEpFree(ep uintptr) { C.gccl_ucx_ep_free(C.uintptr_t(ep)) }

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

func cTagSend(ep uintptr, p unsafe.Pointer, n int, tag uint64, memh uintptr, cuda bool) (uintptr, Status) {
	r := C.gccl_ucx_tag_send(C.uintptr_t(ep), p, C.size_t(n), C.uint64_t(tag), C.uintptr_t(memh), cbool(cuda))
	return uintptr(r.req), Status(r.status)
}

func cTagRecv(w uintptr, p unsafe.Pointer, n int, tag uint64, memh uintptr, cuda bool) (uintptr, int, Status) {
	r := C.gccl_ucx_tag_recv(C.uintptr_t(w), p, C.size_t(n), C.uint64_t(tag), C.uintptr_t(memh), cbool(cuda))
	return uintptr(r.req), int(r.n), Status(r.status)
}

func cRequestStatus(req uintptr) Status { return Status(C.gccl_ucx_request_status(C.uintptr_t(req))) }

func cRecvStatus(req uintptr) (int, Status) {
	var l C.size_t
	s := Status(C.gccl_ucx_recv_status(C.uintptr_t(req), &l))
	return int(l), s
}

func cTest(w, req uintptr, recv bool) (int, Status) {
	r := C.gccl_ucx_test(C.uintptr_t(w), C.uintptr_t(req), cbool(recv))
	return int(r.n), Status(r.status)
}

func cRequestCancel(w, req uintptr) { C.gccl_ucx_request_cancel(C.uintptr_t(w), C.uintptr_t(req)) }

func cRequestFree(req uintptr) { C.gccl_ucx_request_free(C.uintptr_t(req)) }

func cMemMap(ctx uintptr, p unsafe.Pointer, n int, cuda bool) (uintptr, Status) {
	var m C.uintptr_t
	s := Status(C.gccl_ucx_mem_map(C.uintptr_t(ctx), p, C.size_t(n), cbool(cuda), &m))
	return uintptr(m), s
}

func cMemUnmap(ctx, m uintptr) Status {
	return Status(C.gccl_ucx_mem_unmap(C.uintptr_t(ctx), C.uintptr_t(m)))
}

func cReadBack(ctx, ep, memh uintptr, addr, dst unsafe.Pointer) (req, rkey uintptr, s Status) {
	var r, k C.uintptr_t
	s = Status(C.gccl_ucx_read_back(C.uintptr_t(ctx), C.uintptr_t(ep), C.uintptr_t(memh), addr, dst, &r, &k))
	return uintptr(r), uintptr(k), s
}

func cRkeyDestroy(k uintptr) { C.gccl_ucx_rkey_destroy(C.uintptr_t(k)) }
