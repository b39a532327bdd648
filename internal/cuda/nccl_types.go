package cuda

import (
	"fmt"

	"github.com/gccl/gccl"
)

// NCCL is the baseline gccl-perf compares gccl with: libnccl.so.2 loaded at
// run time (LoadNCCL), never a dependency of gccl itself. These are the
// cgo-free parts: results, errors, the enum tables and argument packing.

// NCCLResult is an ncclResult_t. It is the cause inside the *gccl.Error a
// failed NCCL call returns; its values 0..8 equal gccl's Result codes.
type NCCLResult int32

// The ncclResult_t values (NCCL 2.28's nccl.h), and the shim's own.
const (
	NCCLSuccess            NCCLResult = 0
	NCCLUnhandledCudaError NCCLResult = 1
	NCCLSystemError        NCCLResult = 2
	NCCLInternalError      NCCLResult = 3
	NCCLInvalidArgument    NCCLResult = 4
	NCCLInvalidUsage       NCCLResult = 5
	NCCLRemoteError        NCCLResult = 6
	NCCLInProgress         NCCLResult = 7
	NCCLTimeout            NCCLResult = 8

	// NCCLSymbolMissing: the loaded libnccl does not export the entry point.
	NCCLSymbolMissing NCCLResult = 0x7ff00002
	// NCCLBadOp: the shim was handed an operation kind it does not know.
	NCCLBadOp NCCLResult = 0x7ff00003
)

var ncclResultNames = map[NCCLResult]string{
	NCCLSuccess: "ncclSuccess", NCCLUnhandledCudaError: "ncclUnhandledCudaError",
	NCCLSystemError: "ncclSystemError", NCCLInternalError: "ncclInternalError",
	NCCLInvalidArgument: "ncclInvalidArgument", NCCLInvalidUsage: "ncclInvalidUsage",
	NCCLRemoteError: "ncclRemoteError", NCCLInProgress: "ncclInProgress", NCCLTimeout: "ncclTimeout",
	NCCLSymbolMissing: "GCCL_NCCL_SYMBOL_MISSING", NCCLBadOp: "GCCL_NCCL_BAD_OP",
}

func (r NCCLResult) String() string {
	if n, ok := ncclResultNames[r]; ok {
		return n
	}
	return fmt.Sprintf("ncclResult_t(%d)", int32(r))
}

// Error makes NCCLResult an error, so it can be the cause of a *gccl.Error.
func (r NCCLResult) Error() string { return r.String() }

// code is the gccl result code of r.
func (r NCCLResult) code() gccl.Result {
	switch {
	case r >= NCCLUnhandledCudaError && r <= NCCLTimeout:
		return gccl.Result(r) // the same numbering, ncclTimeout included
	case r == NCCLSymbolMissing:
		return gccl.SystemError
	}
	return gccl.InternalError
}

// NCCLLibrary is the file LoadNCCL opens.
const NCCLLibrary = "libnccl.so.2"

// ErrNoNCCL matches the error LoadNCCL returns when libnccl.so.2 cannot be
// opened: errors.Is(err, cuda.ErrNoNCCL) and errors.Is(err, gccl.ErrSystem)
// both hold.
var ErrNoNCCL error = &gccl.Error{
	Code: gccl.SystemError,
	Arg:  "libnccl.so.2",
	Msg:  "libnccl.so.2 not found; install NCCL 2.x (package libnccl2) or add its directory to LD_LIBRARY_PATH",
}

// NCCLNotFound is the cause inside LoadNCCL's error when the library cannot
// be opened: its name and the dynamic loader's reason. It matches ErrNoNCCL.
type NCCLNotFound struct {
	Name   string
	Reason string // dlerror's text
}

func (e *NCCLNotFound) Error() string { return e.Name + " not found (" + e.Reason + ")" }

// Is makes errors.Is(err, ErrNoNCCL) hold.
func (e *NCCLNotFound) Is(target error) bool { return target == ErrNoNCCL }

// NCCLUniqueIDBytes is NCCL_UNIQUE_ID_BYTES.
const NCCLUniqueIDBytes = 128

// NCCLUniqueID is an ncclUniqueId: made by one rank, shared with the others
// by any means (gccl-perf uses its own bootstrap), passed to InitRank.
type NCCLUniqueID [NCCLUniqueIDBytes]byte

// NCCLVersion formats an NCCL version code as major.minor.patch (codes
// before 2.9 are 1000*major+100*minor+patch, later ones 10000*major+...).
func NCCLVersion(code int) string {
	if code < 10000 {
		return fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
}

// ncclEnum is one gccl enum value as NCCL numbers it, and the first NCCL
// version (code) that has it.
type ncclEnum struct {
	value int32
	since int
}

// ncclTypes maps gccl's data types to ncclDataType_t (NCCL 2.28's values).
var ncclTypes = map[gccl.DataType]ncclEnum{
	gccl.Int8: {0, 0}, gccl.Uint8: {1, 0}, gccl.Int32: {2, 0}, gccl.Uint32: {3, 0},
	gccl.Int64: {4, 0}, gccl.Uint64: {5, 0}, gccl.Float16: {6, 0}, gccl.Float32: {7, 0},
	gccl.Float64: {8, 0}, gccl.BFloat16: {9, 21000}, gccl.Float8E4M3: {10, 22400}, gccl.Float8E5M2: {11, 22400},
}

// ncclOps maps gccl's built-in reduction operators to ncclRedOp_t.
var ncclOps = map[gccl.RedOp]ncclEnum{
	gccl.Sum: {0, 0}, gccl.Prod: {1, 0}, gccl.Max: {2, 0}, gccl.Min: {3, 0}, gccl.Avg: {4, 21000},
}

// NCCLDataType returns t's ncclDataType_t, or an InvalidArgument error when
// t is unknown or newer than the NCCL version code given (0: any version).
func NCCLDataType(t gccl.DataType, version int) (int32, error) {
	e, ok := ncclTypes[t]
	if !ok {
		return 0, gccl.Errorf(gccl.InvalidArgument, "datatype", "%v has no NCCL equivalent", t)
	}
	if version > 0 && version < e.since {
		return 0, gccl.Errorf(gccl.InvalidArgument, "datatype", "%v needs NCCL %s or later; this one is %s",
			t, NCCLVersion(e.since), NCCLVersion(version))
	}
	return e.value, nil
}

// NCCLRedOp returns op's ncclRedOp_t, or an InvalidArgument error when op
// is not built in (gccl's per-communicator operators have no NCCL handle)
// or is newer than the NCCL version code given (0: any version).
func NCCLRedOp(op gccl.RedOp, version int) (int32, error) {
	e, ok := ncclOps[op]
	if !ok {
		return 0, gccl.Errorf(gccl.InvalidArgument, "op", "%v is not a built-in operator NCCL knows", op)
	}
	if version > 0 && version < e.since {
		return 0, gccl.Errorf(gccl.InvalidArgument, "op", "%v needs NCCL %s or later; this one is %s",
			op, NCCLVersion(e.since), NCCLVersion(version))
	}
	return e.value, nil
}

// ncclSince is the NCCL release that added each optional entry point, for
// the error a missing one gives.
var ncclSince = map[string]string{
	"ncclCommInitRankConfig": "2.14", "ncclGetLastError": "2.13",
	"ncclCommRegister": "2.19", "ncclCommDeregister": "2.19", "ncclMemAlloc": "2.19", "ncclMemFree": "2.19",
}

// ncclError is the error of NCCL call fn returning r (nil for success).
// desc is ncclGetErrorString's text, last ncclGetLastError's; version is
// the library's version code, for the missing-symbol message.
func ncclError(fn string, r NCCLResult, desc, last string, version int) error {
	if r == NCCLSuccess {
		return nil
	}
	if r == NCCLSymbolMissing {
		since := ncclSince[fn]
		if since == "" {
			since = "a newer release"
		}
		return gccl.Errorf(gccl.SystemError, fn, "%w: libnccl.so.2 %s does not export %s; it needs NCCL %s",
			r, NCCLVersion(version), fn, since)
	}
	var hint string
	switch r {
	case NCCLInvalidArgument, NCCLInvalidUsage:
		hint = "; rerun with NCCL_DEBUG=WARN for NCCL's reason"
	case NCCLRemoteError, NCCLSystemError:
		hint = "; a peer may have failed, see its output (NCCL_DEBUG=INFO for more)"
	}
	if desc != "" {
		desc = ": " + desc
	}
	if last != "" {
		last = " (" + last + ")"
	}
	return gccl.Errorf(r.code(), fn, "%w%s%s%s", r, desc, last, hint)
}
