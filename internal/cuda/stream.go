package cuda

/*
#include "shim.h"
*/
import "C"

// query maps CUDA_ERROR_NOT_READY to (false, nil).
func (d driver) query(fn string, r C.CUresult) (bool, error) {
	if Result(r) == ErrorNotReady {
		return false, nil
	}
	if err := d.check(fn, r); err != nil {
		return false, err
	}
	return true, nil
}

func (d driver) StreamCreate(flags uint32) (Stream, error) {
	var s C.CUstream
	err := d.check("cuStreamCreate", C.gccl_cuStreamCreate(&s, C.uint(flags)))
	return Stream(s), err
}

func (d driver) StreamDestroy(s Stream) error {
	return d.check("cuStreamDestroy", C.gccl_cuStreamDestroy(C.CUstream(s)))
}

func (d driver) StreamSynchronize(s Stream) error {
	return d.check("cuStreamSynchronize", C.gccl_cuStreamSynchronize(C.CUstream(s)))
}

func (d driver) StreamQuery(s Stream) (bool, error) {
	return d.query("cuStreamQuery", C.gccl_cuStreamQuery(C.CUstream(s)))
}

func (d driver) StreamWaitEvent(s Stream, e Event) error {
	return d.check("cuStreamWaitEvent", C.gccl_cuStreamWaitEvent(C.CUstream(s), C.CUevent(e), 0))
}

func (d driver) EventCreate(flags uint32) (Event, error) {
	var e C.CUevent
	err := d.check("cuEventCreate", C.gccl_cuEventCreate(&e, C.uint(flags)))
	return Event(e), err
}

func (d driver) EventDestroy(e Event) error {
	return d.check("cuEventDestroy", C.gccl_cuEventDestroy(C.CUevent(e)))
}

func (d driver) EventRecord(e Event, s Stream) error {
	return d.check("cuEventRecord", C.gccl_cuEventRecord(C.CUevent(e), C.CUstream(s)))
}

func (d driver) EventSynchronize(e Event) error {
	return d.check("cuEventSynchronize", C.gccl_cuEventSynchronize(C.CUevent(e)))
}

func (d driver) EventQuery(e Event) (bool, error) {
	return d.query("cuEventQuery", C.gccl_cuEventQuery(C.CUevent(e)))
}

func (d driver) EventElapsedTime(start, end Event) (float32, error) {
	var ms C.float
	err := d.check("cuEventElapsedTime", C.gccl_cuEventElapsedTime(&ms, C.CUevent(start), C.CUevent(end)))
	return float32(ms), err
}

func (d driver) StreamBeginCapture(s Stream, mode CaptureMode) error {
	return d.check("cuStreamBeginCapture", C.gccl_cuStreamBeginCapture(C.CUstream(s), C.int(mode)))
}

func (d driver) ThreadExchangeStreamCaptureMode(mode CaptureMode) (CaptureMode, error) {
	m := C.int(mode)
	err := d.check("cuThreadExchangeStreamCaptureMode", C.gccl_cuThreadExchangeStreamCaptureMode(&m))
	return CaptureMode(m), err
}

func (d driver) StreamEndCapture(s Stream) (Graph, error) {
	var g C.CUgraph
	err := d.check("cuStreamEndCapture", C.gccl_cuStreamEndCapture(C.CUstream(s), &g))
	return Graph(g), err
}

func (d driver) StreamIsCapturing(s Stream) (CaptureStatus, error) {
	var st C.int
	err := d.check("cuStreamIsCapturing", C.gccl_cuStreamIsCapturing(C.CUstream(s), &st))
	return CaptureStatus(st), err
}

// StreamGetCaptureInfo uses the v3 ABI (CUDA 12.3) and falls back to v2
// (CUDA 11.3) on older drivers.
func (d driver) StreamGetCaptureInfo(s Stream) (CaptureInfo, error) {
	var st C.int
	var id C.ulonglong
	var g C.CUgraph
	r := C.gccl_cuStreamGetCaptureInfo_v3(C.CUstream(s), &st, &id, &g, nil, nil, nil)
	fn := "cuStreamGetCaptureInfo"
	if Result(r) == ErrorSymbolMissing {
		r = C.gccl_cuStreamGetCaptureInfo_v2(C.CUstream(s), &st, &id, &g, nil, nil)
	}
	if err := d.check(fn, r); err != nil {
		return CaptureInfo{}, err
	}
	return CaptureInfo{Status: CaptureStatus(st), ID: uint64(id), Graph: Graph(g)}, nil
}

func (d driver) GraphInstantiate(g Graph) (GraphExec, error) {
	var e C.CUgraphExec
	err := d.check("cuGraphInstantiate", C.gccl_cuGraphInstantiateWithFlags(&e, C.CUgraph(g), 0))
	return GraphExec(e), err
}

func (d driver) GraphLaunch(e GraphExec, s Stream) error {
	return d.check("cuGraphLaunch", C.gccl_cuGraphLaunch(C.CUgraphExec(e), C.CUstream(s)))
}

func (d driver) GraphDestroy(g Graph) error {
	return d.check("cuGraphDestroy", C.gccl_cuGraphDestroy(C.CUgraph(g)))
}

func (d driver) GraphExecDestroy(e GraphExec) error {
	return d.check("cuGraphExecDestroy", C.gccl_cuGraphExecDestroy(C.CUgraphExec(e)))
}

func (d driver) StreamWriteValue32(s Stream, addr uintptr, v uint32, flags uint32) error {
	return d.check("cuStreamWriteValue32",
		C.gccl_cuStreamWriteValue32(C.CUstream(s), C.CUdeviceptr(addr), C.uint(v), C.uint(flags)))
}

func (d driver) StreamWriteValue64(s Stream, addr uintptr, v uint64, flags uint32) error {
	return d.check("cuStreamWriteValue64",
		C.gccl_cuStreamWriteValue64(C.CUstream(s), C.CUdeviceptr(addr), C.ulonglong(v), C.uint(flags)))
}

func (d driver) StreamWaitValue32(s Stream, addr uintptr, v uint32, flags uint32) error {
	return d.check("cuStreamWaitValue32",
		C.gccl_cuStreamWaitValue32(C.CUstream(s), C.CUdeviceptr(addr), C.uint(v), C.uint(flags)))
}

func (d driver) StreamWaitValue64(s Stream, addr uintptr, v uint64, flags uint32) error {
	return d.check("cuStreamWaitValue64",
		C.gccl_cuStreamWaitValue64(C.CUstream(s), C.CUdeviceptr(addr), C.ulonglong(v), C.uint(flags)))
}
