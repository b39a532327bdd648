package cuda

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"os"
	"strconv"
	"unsafe"

	"github.com/gccl/gccl"
)

// driver is the real Driver: calls through the function pointers shim.c
// resolved from libcuda.so.1.
type driver struct{}

var _ Driver = driver{}

func load() (Driver, error) {
	var buf [512]C.char
	if C.gccl_cuda_load(&buf[0], C.int(len(buf))) != 0 {
		return nil, &gccl.Error{Code: gccl.SystemError, Arg: "libcuda.so.1",
			Msg: C.GoString(&buf[0]), Err: ErrNoDriver}
	}
	d := driver{}
	raiseConnections()
	if err := d.check("cuInit", C.gccl_cuInit(0)); err != nil {
		return nil, &gccl.Error{Code: gccl.SystemError, Arg: "libcuda.so.1",
			Msg: "cuInit failed: " + err.Error(), Err: ErrNoDriver}
	}
	return d, nil
}

// raiseConnections sets CUDA_DEVICE_MAX_CONNECTIONS to its maximum, 32,
// when the process has not set it, before the driver reads it. Streams of
// one context share that many hardware queues (8 by default), and kernels
// of two streams on one queue run one after the other: with several ranks
// on one GPU in one process, a kernel waiting for a peer's kernel queued
// behind it would wait for ever.
func raiseConnections() {
	if _, set := os.LookupEnv("CUDA_DEVICE_MAX_CONNECTIONS"); !set {
		_ = os.Setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32")
	}
}

// check turns a CUresult into an error naming the call.
func (driver) check(fn string, r C.CUresult) error {
	if r == 0 {
		return nil
	}
	res := Result(r)
	var desc *C.char
	if res != ErrorSymbolMissing && C.gccl_cuGetErrorString(r, &desc) == 0 && desc != nil {
		if _, known := resultNames[res]; !known {
			var name *C.char
			if C.gccl_cuGetErrorName(r, &name) == 0 && name != nil {
				return NewError(fn, res, C.GoString(name)+": "+C.GoString(desc))
			}
		}
		return NewError(fn, res, C.GoString(desc))
	}
	if res == ErrorSymbolMissing {
		cs := C.CString(fn)
		defer C.free(unsafe.Pointer(cs))
		var ok C.int
		v := C.gccl_cuda_symbol_version(cs, &ok)
		return NewError(fn, res, "not exported at ABI version "+strconv.Itoa(int(v)))
	}
	return NewError(fn, res, "")
}

func (d driver) Version() (int, error) {
	var v C.int
	err := d.check("cuDriverGetVersion", C.gccl_cuDriverGetVersion(&v))
	return int(v), err
}

func (d driver) DeviceCount() (int, error) {
	var n C.int
	err := d.check("cuDeviceGetCount", C.gccl_cuDeviceGetCount(&n))
	return int(n), err
}

func (d driver) DeviceGet(ordinal int) (Device, error) {
	var dev C.CUdevice
	err := d.check("cuDeviceGet", C.gccl_cuDeviceGet(&dev, C.int(ordinal)))
	return Device(dev), err
}

func (d driver) DeviceAttribute(attr DeviceAttr, dev Device) (int, error) {
	var v C.int
	err := d.check("cuDeviceGetAttribute", C.gccl_cuDeviceGetAttribute(&v, C.int(attr), C.CUdevice(dev)))
	return int(v), err
}

func (d driver) DeviceName(dev Device) (string, error) {
	var buf [256]C.char
	if err := d.check("cuDeviceGetName", C.gccl_cuDeviceGetName(&buf[0], C.int(len(buf)), C.CUdevice(dev))); err != nil {
		return "", err
	}
	return C.GoString(&buf[0]), nil
}

func (d driver) DeviceUUID(dev Device) (UUID, error) {
	var u C.CUuuid
	var out UUID
	err := d.check("cuDeviceGetUuid", C.gccl_cuDeviceGetUuid(&u, C.CUdevice(dev)))
	for i := range out {
		out[i] = byte(u.bytes[i])
	}
	return out, err
}

func (d driver) DeviceCanAccessPeer(dev, peer Device) (bool, error) {
	var c C.int
	err := d.check("cuDeviceCanAccessPeer", C.gccl_cuDeviceCanAccessPeer(&c, C.CUdevice(dev), C.CUdevice(peer)))
	return c != 0, err
}

func (d driver) DeviceP2PAttribute(attr P2PAttr, src, dst Device) (int, error) {
	var v C.int
	err := d.check("cuDeviceGetP2PAttribute", C.gccl_cuDeviceGetP2PAttribute(&v, C.int(attr), C.CUdevice(src), C.CUdevice(dst)))
	return int(v), err
}

func (d driver) PrimaryCtxRetain(dev Device) (Context, error) {
	var c C.CUcontext
	err := d.check("cuDevicePrimaryCtxRetain", C.gccl_cuDevicePrimaryCtxRetain(&c, C.CUdevice(dev)))
	return Context(c), err
}

func (d driver) PrimaryCtxRelease(dev Device) error {
	return d.check("cuDevicePrimaryCtxRelease", C.gccl_cuDevicePrimaryCtxRelease(C.CUdevice(dev)))
}

func (d driver) CtxSetCurrent(ctx Context) error {
	return d.check("cuCtxSetCurrent", C.gccl_cuCtxSetCurrent(C.CUcontext(ctx)))
}

func (d driver) CtxGetCurrent() (Context, error) {
	var c C.CUcontext
	err := d.check("cuCtxGetCurrent", C.gccl_cuCtxGetCurrent(&c))
	return Context(c), err
}

func (d driver) CtxSynchronize() error {
	return d.check("cuCtxSynchronize", C.gccl_cuCtxSynchronize())
}

func (d driver) ProfilerStart() error {
	return d.check("cuProfilerStart", C.gccl_cuProfilerStart())
}

func (d driver) ProfilerStop() error {
	return d.check("cuProfilerStop", C.gccl_cuProfilerStop())
}

func (d driver) CtxEnablePeerAccess(peer Context) error {
	err := d.check("cuCtxEnablePeerAccess", C.gccl_cuCtxEnablePeerAccess(C.CUcontext(peer), 0))
	if ResultOf(err) == ErrorPeerAccessAlreadyEnabled {
		return nil
	}
	return err
}
