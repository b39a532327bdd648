package gccl

import (
	"errors"
	"fmt"
)

// Result is a gccl result code; the values match NCCL's ncclResult_t.
type Result int

// The result codes.
const (
	Success            Result = 0
	UnhandledCudaError Result = 1
	SystemError        Result = 2
	InternalError      Result = 3
	InvalidArgument    Result = 4
	InvalidUsage       Result = 5
	RemoteError        Result = 6
	InProgress         Result = 7
	TimeoutError       Result = 8 // gccl's own: a deadline expired
)

var resultNames = map[Result]string{
	Success: "success", UnhandledCudaError: "unhandled cuda error", SystemError: "system error",
	InternalError: "internal error", InvalidArgument: "invalid argument", InvalidUsage: "invalid usage",
	RemoteError: "remote error", InProgress: "in progress", TimeoutError: "timeout",
}

func (r Result) String() string {
	if n, ok := resultNames[r]; ok {
		return n
	}
	return fmt.Sprintf("Result(%d)", int(r))
}

// Sentinel errors, one per result code. Test with errors.Is(err, gccl.ErrInvalidArgument).
var (
	ErrUnhandledCuda   = &Error{Code: UnhandledCudaError}
	ErrSystem          = &Error{Code: SystemError}
	ErrInternal        = &Error{Code: InternalError}
	ErrInvalidArgument = &Error{Code: InvalidArgument}
	ErrInvalidUsage    = &Error{Code: InvalidUsage}
	ErrRemote          = &Error{Code: RemoteError}
	ErrInProgress      = &Error{Code: InProgress}
	ErrTimeout         = &Error{Code: TimeoutError}
)

// Error is a gccl error: a result code, the argument or subject it is about,
// a message saying what was wrong and what to do, and an optional cause.
type Error struct {
	Code Result
	Arg  string // the argument or subject at fault ("root", "sendbuff", "peer 3"), may be empty
	Msg  string
	Err  error // the cause, may be nil

	msgHasCause bool // Msg already spells out Err (made by Errorf with %w)
}

func (e *Error) Error() string {
	s := "gccl: " + e.Code.String()
	if e.Arg != "" {
		s += ": " + e.Arg
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil && !e.msgHasCause {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches any *Error with the same code, so errors.Is(err, ErrTimeout) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Arg == "" && t.Msg == "" && t.Err == nil
}

// Errorf makes an *Error with a formatted message. A %w verb wraps a cause.
func Errorf(code Result, arg, format string, a ...any) error {
	m := fmt.Errorf(format, a...)
	cause := errors.Unwrap(m)
	return &Error{Code: code, Arg: arg, Msg: m.Error(), Err: cause, msgHasCause: cause != nil}
}

// Wrap makes an *Error with the given code around a cause; nil stays nil.
func Wrap(code Result, arg string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Arg: arg, Err: err}
}

// Code returns the result code of err: Success for nil, the code of the first
// *Error in its chain, else InternalError.
func Code(err error) Result {
	if err == nil {
		return Success
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return InternalError
}
