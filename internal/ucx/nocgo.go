//go:build !cgo

package ucx

import "unsafe"

// Without cgo libucp cannot be reached: Load fails with the reason, and
// nothing below it is ever called (every handle comes from a loaded
// library).

func cLoad(string) (string, bool) {
	return "built without cgo (CGO_ENABLED=0); rebuild with cgo to use UCX, or use GCCL_NET=socket", false
}

func cVersion() (major, minor, release uint)                       { return 0, 0, 0 }
func cStatusString(Status) string                                  { return "libucp.so.0 is not loaded" }
func cInit([]string) (uintptr, Status, string)                     { return 0, errNotLoaded, "" }
func cCleanup(uintptr)                                             {}
func cMemoryTypes(uintptr) (uint64, Status)                        { return 0, errNotLoaded }
func cContextInfo(uintptr) string                                  { return "" }
func cWorkerCreate(uintptr) (uintptr, Status)                      { return 0, errNotLoaded }
func cWorkerDestroy(uintptr)                                       {}
func cWorkerAddress(uintptr) ([]byte, Status)                      { return nil, errNotLoaded }
func cProgress(uintptr) uint                                       { return 0 }
func cEventFd(uintptr) (int, Status)                               { return -1, errNotLoaded }
func cArm(uintptr) (int, Status)                                   { return -1, errNotLoaded }
func cSignal(uintptr) Status                                       { return errNotLoaded }
func cPoll(int, int)                                               {}
func cEpCreate(uintptr, []byte) (uintptr, Status)                  { return 0, errNotLoaded }
func cEpStatus(uintptr) Status                                     { return errNotLoaded }
func cEpClose(uintptr, bool) (uintptr, Status)                     { return 0, errNotLoaded }
func cEpFlush(uintptr) (uintptr, Status)                           { return 0, errNotLoaded }
func cWorkerFlush(uintptr) (uintptr, Status)                       { return 0, errNotLoaded }
func cEpFree(uintptr)                                              {}
func cRequestStatus(uintptr) Status                                { return errNotLoaded }
func cRecvStatus(uintptr) (int, Status)                            { return 0, errNotLoaded }
func cTest(uintptr, uintptr, bool) (int, Status)                   { return 0, errNotLoaded }
func cRequestCancel(uintptr, uintptr)                              {}
func cRequestFree(uintptr)                                         {}
func cMemUnmap(uintptr, uintptr) Status                            { return errNotLoaded }
func cRkeyDestroy(uintptr)                                         {}
func cMemMap(uintptr, unsafe.Pointer, int, bool) (uintptr, Status) { return 0, errNotLoaded }
func cTagSend(uintptr, unsafe.Pointer, int, uint64, uintptr, bool) (uintptr, Status) {
	return 0, errNotLoaded
}
func cTagRecv(uintptr, unsafe.Pointer, int, uint64, uintptr, bool) (uintptr, int, Status) {
	return 0, 0, errNotLoaded
}
func cReadBack(uintptr, uintptr, uintptr, unsafe.Pointer, unsafe.Pointer) (uintptr, uintptr, Status) {
	return 0, 0, errNotLoaded
}
