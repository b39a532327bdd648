//go:build !cgo

package mpi

// Without cgo there is no MPI to link: the package still builds, so that
// programs importing mpiboot build with CGO_ENABLED=0, and Init, Join and
// every other call fail at run time with errNoCgo.

import "github.com/gccl/gccl"

// What this binary links, for mpiboot's launcher check.
const (
	BuiltFor    = "no MPI (built with CGO_ENABLED=0)"
	RebuildHint = "CGO_ENABLED=1 go build"
)

var errNoCgo = gccl.Errorf(gccl.SystemError, "mpi",
	"gccl was built without cgo (CGO_ENABLED=0), so it has no MPI; rebuild with CGO_ENABLED=1 and an MPI installed (Open MPI, or MPICH with -tags mpich), or bootstrap without MPI (comm.NewUniqueID and comm.InitRank)")

// request stands for an MPI request; none is ever started.
type request struct{}

func (*request) test() (bool, error)     { return false, errNoCgo }
func (*request) result(int, []byte)      {}
func (*request) free()                   {}
func (*request) freeOnError(error) error { return errNoCgo }

func cInitialized() (bool, error)      { return false, errNoCgo }
func cFinalized() (bool, error)        { return false, errNoCgo }
func cInitThread(Level) (Level, error) { return Single, errNoCgo }
func cQueryThread() (Level, error)     { return Single, errNoCgo }
func cIsThreadMain() (bool, error)     { return false, errNoCgo }
func cCommFree(handle) error           { return errNoCgo }
func cFinalize() error                 { return errNoCgo }
func cAbort(int) error                 { return errNoCgo }

// handle stands for an MPI communicator; none is ever made.
type handle = *struct{}

func cIdup(From, uintptr) (handle, *request, error)                     { return nil, nil, errNoCgo }
func cCommReady(handle) (rank, size int, err error)                     { return -1, 0, errNoCgo }
func cSplit(handle, int, int) (handle, error)                           { return nil, errNoCgo }
func cAppnum() (int, bool, error)                                       { return 0, false, errNoCgo }
func cFortran(handle) int                                               { return 0 }
func cRaw(handle) uintptr                                               { return 0 }
func cIprobe(handle) (bool, error)                                      { return false, errNoCgo }
func cIbcast(handle, []byte, int) (*request, error)                     { return nil, errNoCgo }
func cIallgather(handle, []byte, int) (*request, error)                 { return nil, errNoCgo }
func cIbarrier(handle) (*request, error)                                { return nil, errNoCgo }
func cIsendrecv(handle, bool, uintptr, int, int, int) (*request, error) { return nil, errNoCgo }
func cCUDAAware() int                                                   { return -1 }

func cAllreduce(handle, uintptr, uintptr, int, int, int) error          { return errNoCgo }
func cAllgather(handle, uintptr, uintptr, int, int) error               { return errNoCgo }
func cReduceScatterBlock(handle, uintptr, uintptr, int, int, int) error { return errNoCgo }
func cBcast(handle, uintptr, int, int, int) error                       { return errNoCgo }
func cReduce(handle, uintptr, uintptr, int, int, int, int) error        { return errNoCgo }
func cSendrecv(handle, uintptr, int, int, uintptr, int, int, int) error { return errNoCgo }
func cAlltoall(handle, uintptr, uintptr, int, int) error                { return errNoCgo }
func cHalo(handle, []Face, int) error                                   { return errNoCgo }
