package badinput

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/bufreg"
	"github.com/stretchr/testify/require"
)

// collectiveRegister is a case of class registration on the shared
// world: every rank calls Register (it is collective), rank 0 with the
// bad arguments bad gives it, rank 1 with a valid 4 KiB MemAlloc buffer;
// rank 0's error is the answer, and rank 1 must fail too, with peerCode.
func collectiveRegister(name, did, arg string, words []string, peerCode gccl.Result, peerWords string,
	bad func(t *testing.T, w *world) (uintptr, int)) badCase {
	return badCase{name: name, class: registration, did: did, code: gccl.InvalidArgument, arg: arg, words: words,
		then:   "Register is collective: rank 1, whose arguments were valid, fails too (`" + codeNames[peerCode] + "`: “" + peerWords + "”)",
		shared: true,
		run: onShared(func(t *testing.T, w *world) error {
			good, err := bufreg.MemAlloc(w.devs[1], 4096)
			require.NoError(t, err)
			t.Cleanup(func() { _ = bufreg.MemFree(good) })
			p, n := bad(t, w)
			hs := make([]*bufreg.Handle, 2)
			errs := w.par(func(r int) (err error) {
				if r == 0 {
					hs[r], err = bufreg.Register(w.comms[0], p, n)
				} else {
					hs[r], err = bufreg.Register(w.comms[1], good, 4096)
				}
				return err
			})
			require.Nil(t, hs[0])
			require.Nil(t, hs[1])
			expect(t, peerCode, "", []string{peerWords}, errs[1])
			return errs[0]
		})}
}

// memCase is a case of class registration made by rank 0 alone on the
// shared world.
func memCase(name, did, arg string, code gccl.Result, words []string, call func(t *testing.T, w *world) error) badCase {
	return badCase{name: name, class: registration, did: did, code: code, arg: arg, words: words, shared: true, run: onShared(call)}
}

// registeredPair registers a 4 KiB MemAlloc buffer on every rank of w and
// returns rank 0's buffer and handle (the others are released at the end).
func registeredPair(t *testing.T, w *world) (uintptr, *bufreg.Handle) {
	bufs, hs := make([]uintptr, 2), make([]*bufreg.Handle, 2)
	for r := range bufs {
		p, err := bufreg.MemAlloc(w.devs[r], 4096)
		require.NoError(t, err)
		bufs[r] = p
	}
	errs := w.par(func(r int) (err error) { hs[r], err = bufreg.Register(w.comms[r], bufs[r], 4096); return err })
	for r := range bufs {
		require.NoError(t, errs[r])
		t.Cleanup(func() { _ = bufreg.Deregister(hs[r]); _ = bufreg.MemFree(bufs[r]) })
	}
	return bufs[0], hs[0]
}

func registrationCases() []badCase {
	ia, iu := gccl.InvalidArgument, gccl.InvalidUsage
	return []badCase{
		collectiveRegister("register-nil", "bufreg.Register of a nil pointer on rank 0", "ptr", []string{"nil buffer"},
			iu, "rank 0 could not register its buffer",
			func(t *testing.T, w *world) (uintptr, int) { return 0, 4096 }),
		collectiveRegister("register-past-alloc", "bufreg.Register of 8 KiB of a 4 KiB MemAlloc buffer on rank 0", "size",
			[]string{"8192 bytes at offset 0 run past the end of a 4096-byte allocation"}, iu, "rank 0 could not register its buffer",
			func(t *testing.T, w *world) (uintptr, int) {
				p, err := bufreg.MemAlloc(w.devs[0], 4096)
				require.NoError(t, err)
				t.Cleanup(func() { _ = bufreg.MemFree(p) })
				return p, 8192
			}),
		collectiveRegister("register-go-memory", "bufreg.Register of a Go slice (memory peers cannot map) on rank 0", "ptr",
			[]string{"is not host memory from MemAlloc or Device.Alloc", "bufreg.MemAlloc"}, iu, "rank 0 could not register its buffer",
			func(t *testing.T, w *world) (uintptr, int) {
				buf := make([]byte, 4096)
				var pin runtime.Pinner
				pin.Pin(&buf[0])
				t.Cleanup(pin.Unpin)
				return uintptr(unsafe.Pointer(&buf[0])), len(buf)
			}),
		collectiveRegister("register-negative-size", "bufreg.Register of -1 bytes on rank 0", "size", []string{"cannot register -1 bytes"},
			iu, "rank 0 could not register its buffer",
			func(t *testing.T, w *world) (uintptr, int) { return w.alloc(t, 0, 4096), -1 }),
		memCase("deregister-twice", "bufreg.Deregister of the same handle twice", "handle", iu, []string{"registration handle was already deregistered"},
			func(t *testing.T, w *world) error {
				_, h := registeredPair(t, w)
				require.NoError(t, bufreg.Deregister(h))
				return bufreg.Deregister(h)
			}),
		memCase("deregister-nil", "bufreg.Deregister(nil)", "handle", ia, []string{"nil registration handle"},
			func(t *testing.T, w *world) error { return bufreg.Deregister(nil) }),
		memCase("memfree-registered", "bufreg.MemFree of a buffer still registered", "ptr", iu,
			[]string{"is still registered (1 registrations)", "Deregister it"},
			func(t *testing.T, w *world) error {
				p, _ := registeredPair(t, w)
				return bufreg.MemFree(p)
			}),
		memCase("memfree-twice", "bufreg.MemFree of the same buffer twice", "ptr", iu, []string{"was already freed by MemFree"},
			func(t *testing.T, w *world) error {
				p, err := bufreg.MemAlloc(w.devs[0], 4096)
				require.NoError(t, err)
				require.NoError(t, bufreg.MemFree(p))
				return bufreg.MemFree(p)
			}),
		memCase("memfree-foreign", "bufreg.MemFree of a Device.Alloc pointer", "ptr", ia, []string{"was not returned by bufreg.MemAlloc"},
			func(t *testing.T, w *world) error { return bufreg.MemFree(w.alloc(t, 0, 4096)) }),
		memCase("memalloc-negative", "bufreg.MemAlloc of -5 bytes", "size", ia, []string{"cannot allocate -5 bytes"},
			func(t *testing.T, w *world) error {
				_, err := bufreg.MemAlloc(w.devs[0], -5)
				return err
			}),
		memCase("memalloc-nil-device", "bufreg.MemAlloc on a nil device", "device", ia, []string{"nil device"},
			func(t *testing.T, w *world) error {
				_, err := bufreg.MemAlloc(nil, 4096)
				return err
			}),
		{name: "register-nil-comm", class: registration, did: "bufreg.Register with a nil communicator", code: ia, arg: "comm",
			words: []string{"nil communicator"}, run: func(t *testing.T) error {
				_, err := bufreg.Register(nil, 0x1000, 4096)
				return err
			}},
		{name: "deregister-after-close", class: registration, did: "bufreg.Deregister after the communicator was closed",
			code: iu, arg: "handle", words: []string{"was deregistered when its communicator was destroyed"},
			run: func(t *testing.T) error {
				c := soloComm(t, nil)
				p, err := bufreg.MemAlloc(c.Device(), 4096)
				require.NoError(t, err)
				t.Cleanup(func() { _ = bufreg.MemFree(p) })
				h, err := bufreg.Register(c, p, 4096)
				require.NoError(t, err)
				require.NoError(t, c.Close())
				return bufreg.Deregister(h)
			}},
	}
}
