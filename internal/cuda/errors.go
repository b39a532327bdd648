package cuda

import (
	"errors"
	"fmt"

	"github.com/gccl/gccl"
)

// Result is a CUresult. It is the cause inside the *gccl.Error a failed
// driver call returns, so errors.Is(err, cuda.ErrorNotReady) works.
type Result int32

// The CUresult values gccl tests for by name.
const (
	Success                          Result = 0
	ErrorInvalidValue                Result = 1
	ErrorOutOfMemory                 Result = 2
	ErrorNotInitialized              Result = 3
	ErrorDeinitialized               Result = 4
	ErrorNoDevice                    Result = 100
	ErrorInvalidDevice               Result = 101
	ErrorInvalidImage                Result = 200
	ErrorInvalidContext              Result = 201
	ErrorMapFailed                   Result = 205
	ErrorAlreadyMapped               Result = 208
	ErrorInvalidHandle               Result = 400
	ErrorNotFound                    Result = 500
	ErrorNotReady                    Result = 600
	ErrorIllegalAddress              Result = 700
	ErrorLaunchTimeout               Result = 702
	ErrorPeerAccessAlreadyEnabled    Result = 704
	ErrorPeerAccessNotEnabled        Result = 705
	ErrorHostMemoryAlreadyRegistered Result = 712
	ErrorHostMemoryNotRegistered     Result = 713
	ErrorNotSupported                Result = 801
	ErrorStreamCaptureUnsupported    Result = 900
	ErrorStreamCaptureInvalidated    Result = 901
	ErrorStreamCaptureUnmatched      Result = 903
	ErrorStreamCaptureUnjoined       Result = 904
	ErrorStreamCaptureIsolation      Result = 905
	ErrorStreamCaptureWrongThread    Result = 908
	ErrorUnknown                     Result = 999

	// ErrorSymbolMissing is gccl's own: the driver does not export the
	// entry point at the ABI version gccl pins.
	ErrorSymbolMissing Result = 0x7ff00001
)

var resultNames = map[Result]string{
	Success: "CUDA_SUCCESS", ErrorInvalidValue: "CUDA_ERROR_INVALID_VALUE",
	ErrorOutOfMemory: "CUDA_ERROR_OUT_OF_MEMORY", ErrorNotInitialized: "CUDA_ERROR_NOT_INITIALIZED",
	ErrorDeinitialized: "CUDA_ERROR_DEINITIALIZED", ErrorNoDevice: "CUDA_ERROR_NO_DEVICE",
	ErrorInvalidDevice: "CUDA_ERROR_INVALID_DEVICE", ErrorInvalidImage: "CUDA_ERROR_INVALID_IMAGE",
	ErrorInvalidContext: "CUDA_ERROR_INVALID_CONTEXT", ErrorMapFailed: "CUDA_ERROR_MAP_FAILED",
	ErrorAlreadyMapped: "CUDA_ERROR_ALREADY_MAPPED", ErrorInvalidHandle: "CUDA_ERROR_INVALID_HANDLE",
	ErrorNotFound: "CUDA_ERROR_NOT_FOUND", ErrorNotReady: "CUDA_ERROR_NOT_READY",
	ErrorIllegalAddress: "CUDA_ERROR_ILLEGAL_ADDRESS", ErrorLaunchTimeout: "CUDA_ERROR_LAUNCH_TIMEOUT",
	ErrorPeerAccessAlreadyEnabled:    "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
	ErrorPeerAccessNotEnabled:        "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
	ErrorHostMemoryAlreadyRegistered: "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
	ErrorHostMemoryNotRegistered:     "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
	ErrorNotSupported:                "CUDA_ERROR_NOT_SUPPORTED",
	ErrorStreamCaptureUnsupported:    "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
	ErrorStreamCaptureInvalidated:    "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
	ErrorStreamCaptureUnmatched:      "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
	ErrorStreamCaptureUnjoined:       "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
	ErrorStreamCaptureIsolation:      "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
	ErrorStreamCaptureWrongThread:    "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
	ErrorUnknown:                     "CUDA_ERROR_UNKNOWN",
	ErrorSymbolMissing:               "GCCL_CUDA_ERROR_SYMBOL_MISSING",
}

// String is the CUresult's name, as cuGetErrorName spells it.
func (r Result) String() string {
	if n, ok := resultNames[r]; ok {
		return n
	}
	return fmt.Sprintf("CUresult(%d)", int32(r))
}

// Error makes Result an error, so it can be the cause of a *gccl.Error.
func (r Result) Error() string { return r.String() }

// ErrNoDriver is the cause of every error Load returns when libcuda.so.1
// cannot be used: errors.Is(err, cuda.ErrNoDriver) and
// errors.Is(err, gccl.ErrSystem) both hold.
var ErrNoDriver error = &gccl.Error{
	Code: gccl.SystemError,
	Arg:  "libcuda.so.1",
	Msg:  "no usable CUDA driver; install the NVIDIA driver or use the host backend (GCCL_DEVICE=host)",
}

// NewError is the error a driver call fn returns for r (nil for Success).
// desc is the driver's description (cuGetErrorString), may be empty.
// Fakes use it so their errors read like the real driver's.
func NewError(fn string, r Result, desc string) error {
	if r == Success {
		return nil
	}
	var hint string
	switch r {
	case ErrorSymbolMissing:
		hint = "; the driver is too old for this call, update the NVIDIA driver"
	case ErrorOutOfMemory:
		hint = "; free device memory or use smaller buffers"
	}
	if desc != "" {
		desc = ": " + desc
	}
	return gccl.Errorf(gccl.UnhandledCudaError, fn, "%w%s%s", r, desc, hint)
}

// ResultOf returns the CUresult inside err: Success for nil, ErrorUnknown
// when err holds none.
func ResultOf(err error) Result {
	if err == nil {
		return Success
	}
	var r Result
	if errors.As(err, &r) {
		return r
	}
	return ErrorUnknown
}
