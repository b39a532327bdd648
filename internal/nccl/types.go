package nccl

import (
	"fmt"

	"github.com/gccl/gccl"
)

// The cgo-free parts of the binding: results, errors, the enum tables.

// Result is an ncclResult_t. It is the cause inside the *gccl.Error a
// failed NCCL call returns; its values 0..8 equal gccl's Result codes.
type Result int32

// The ncclResult_t values (NCCL 2.28's nccl.h), and the shim's own.
const (
	Success            Result = 0
	UnhandledCudaError Result = 1
	SystemError        Result = 2
	InternalError      Result = 3
	InvalidArgument    Result = 4
	InvalidUsage       Result = 5
	RemoteError        Result = 6
	InProgress         Result = 7
	Timeout            Result = 8

	// SymbolMissing: the loaded libnccl does not export the entry point.
	SymbolMissing Result = 0x7ff00002
	// BadOp: the shim was handed an operation kind it does not know.
	BadOp Result = 0x7ff00003
)

var resultNames = map[Result]string{
	Success: "ncclSuccess", UnhandledCudaError: "ncclUnhandledCudaError",
	SystemError: "ncclSystemError", InternalError: "ncclInternalError",
	InvalidArgument: "ncclInvalidArgument", InvalidUsage: "ncclInvalidUsage",
	RemoteError: "ncclRemoteError", InProgress: "ncclInProgress", Timeout: "ncclTimeout",
	SymbolMissing: "GCCL_NCCL_SYMBOL_MISSING", BadOp: "GCCL_NCCL_BAD_OP",
}

func (r Result) String() string {
	if n, ok := resultNames[r]; ok {
		return n
	}
	return fmt.Sprintf("ncclResult_t(%d)", int32(r))
}

// Error makes Result an error, so it can be the cause of a *gccl.Error.
func (r Result) Error() string { return r.String() }

// code is the gccl result code of r.
func (r Result) code() gccl.Result {
	switch {
	case r >= UnhandledCudaError && r <= Timeout:
		return gccl.Result(r) // the same numbering, ncclTimeout included
	case r == SymbolMissing:
		return gccl.SystemError
	}
	return gccl.InternalError
}

// SOName is the file Load opens.
const SOName = "libnccl.so.2"

// ErrNoLibrary matches the error Load returns when libnccl.so.2 cannot be
// opened: errors.Is(err, nccl.ErrNoLibrary) and errors.Is(err, gccl.ErrSystem)
// both hold.
var ErrNoLibrary error = &gccl.Error{
	Code: gccl.SystemError,
	Arg:  "libnccl.so.2",
	Msg:  "libnccl.so.2 not found; install NCCL 2.x (package libnccl2) or add its directory to LD_LIBRARY_PATH",
}

// NotFound is the cause inside Load's error when the library cannot
// be opened: its name and the dynamic loader's reason. It matches ErrNoLibrary.
type NotFound struct {
	Name   string
	Reason string // dlerror's text
}

func (e *NotFound) Error() string { return e.Name + " not found (" + e.Reason + ")" }

// Is makes errors.Is(err, ErrNoLibrary) hold.
func (e *NotFound) Is(target error) bool { return target == ErrNoLibrary }

// UniqueIDBytes is NCCL_UNIQUE_ID_BYTES.
const UniqueIDBytes = 128

// UniqueID is an ncclUniqueId: made by one rank, shared with the others
// by any means (gccl-perf uses its own bootstrap), passed to InitRank.
type UniqueID [UniqueIDBytes]byte

// VersionString formats an NCCL version code as major.minor.patch (codes
// before 2.9 are 1000*major+100*minor+patch, later ones 10000*major+...).
func VersionString(code int) string {
	if code < 10000 {
		return fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
}

// enum is one gccl enum value as NCCL numbers it, and the first NCCL
// version (code) that has it.
type enum struct {
	value int32
	since int
}

// dataTypes maps gccl's data types to ncclDataType_t (NCCL 2.28's values).
var dataTypes = map[gccl.DataType]enum{
	gccl.Int8: {0, 0}, gccl.Uint8: {1, 0}, gccl.Int32: {2, 0}, gccl.Uint32: {3, 0},
	gccl.Int64: {4, 0}, gccl.Uint64: {5, 0}, gccl.Float16: {6, 0}, gccl.Float32: {7, 0},
	gccl.Float64: {8, 0}, gccl.BFloat16: {9, 21000}, gccl.Float8E4M3: {10, 22400}, gccl.Float8E5M2: {11, 22400},
}

// redOps maps gccl's built-in reduction operators to ncclRedOp_t.
var redOps = map[gccl.RedOp]enum{
	gccl.Sum: {0, 0}, gccl.Prod: {1, 0}, gccl.Max: {2, 0}, gccl.Min: {3, 0}, gccl.Avg: {4, 21000},
}

// DataType returns t's ncclDataType_t, or an InvalidArgument error when
// t is unknown or newer than the NCCL version code given (0: any version).
func DataType(t gccl.DataType, version int) (int32, error) {
	e, ok := dataTypes[t]
	if !ok {
		return 0, gccl.Errorf(gccl.InvalidArgument, "datatype", "%v has no NCCL equivalent", t)
	}
	if version > 0 && version < e.since {
		return 0, gccl.Errorf(gccl.InvalidArgument, "datatype", "%v needs NCCL %s or later; this one is %s",
			t, VersionString(e.since), VersionString(version))
	}
	return e.value, nil
}

// RedOp returns op's ncclRedOp_t, or an InvalidArgument error when op
// is not built in (gccl's per-communicator operators have no NCCL handle)
// or is newer than the NCCL version code given (0: any version).
func RedOp(op gccl.RedOp, version int) (int32, error) {
	e, ok := redOps[op]
	if !ok {
		return 0, gccl.Errorf(gccl.InvalidArgument, "op", "%v is not a built-in operator NCCL knows", op)
	}
	if version > 0 && version < e.since {
		return 0, gccl.Errorf(gccl.InvalidArgument, "op", "%v needs NCCL %s or later; this one is %s",
			op, VersionString(e.since), VersionString(version))
	}
	return e.value, nil
}

// since is the NCCL release that added each optional entry point, for
// the error a missing one gives.
var since = map[string]string{
	"ncclCommInitRankConfig": "2.14", "ncclGetLastError": "2.13",
	"ncclCommRegister": "2.19", "ncclCommDeregister": "2.19", "ncclMemAlloc": "2.19", "ncclMemFree": "2.19",
}

// ncclError is the error of NCCL call fn returning r (nil for success).
// desc is ncclGetErrorString's text, last ncclGetLastError's; version is
// the library's version code, for the missing-symbol message.
func callError(fn string, r Result, desc, last string, version int) error {
	if r == Success {
		return nil
	}
	if r == SymbolMissing {
		since := since[fn]
		if since == "" {
			since = "a newer release"
		}
		return gccl.Errorf(gccl.SystemError, fn, "%w: libnccl.so.2 %s does not export %s; it needs NCCL %s",
			r, VersionString(version), fn, since)
	}
	var hint string
	switch r {
	case InvalidArgument, InvalidUsage:
		hint = "; rerun with NCCL_DEBUG=WARN for NCCL's reason"
	case RemoteError, SystemError:
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
