// Package demo holds what the MPI examples share: deterministic random
// float32 data every rank can recompute, moving it to and from a device,
// checking a sum element by element, and agreeing on the outcome over MPI.
//
// It is public, so that an example copied into another module builds there
// as it is (go get github.com/gccl/gccl); a program of your own would
// rather use device.Device's Alloc, CopyIn and CopyOut directly.
package demo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"unsafe"

	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/mpiboot"
)

// Values returns rank's n input values: random integers in [1, 100], so any
// sum over at most 160000 ranks is exact in float32 whatever the order.
func Values(rank, n int) []float32 {
	rng := rand.New(rand.NewPCG(uint64(rank)+1, 0x9e3779b97f4a7c15))
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(1 + rng.IntN(100))
	}
	return v
}

// Sum is the element-wise sum of the Values of ranks 0..nranks-1.
func Sum(nranks, n int) []float32 {
	sum := make([]float32, n)
	for r := range nranks {
		for i, x := range Values(r, n) {
			sum[i] += x
		}
	}
	return sum
}

func bytesOf(v []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}

// Upload allocates device memory holding v.
func Upload(d device.Device, v []float32) (uintptr, error) {
	p, err := d.Alloc(4 * len(v))
	if err != nil {
		return 0, err
	}
	if err := d.CopyIn(p, bytesOf(v)); err != nil {
		_ = d.Free(p)
		return 0, err
	}
	return p, nil
}

// Poisoned allocates device memory for n float32 filled with NaN, so an
// element the operation does not write cannot pass a check.
func Poisoned(d device.Device, n int) (uintptr, error) {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(math.NaN())
	}
	return Upload(d, v)
}

// Download copies n float32 from device memory at p.
func Download(d device.Device, p uintptr, n int) ([]float32, error) {
	v := make([]float32, n)
	return v, d.CopyOut(bytesOf(v), p)
}

// Check compares every element of got with want exactly.
func Check(got, want []float32) error {
	if len(got) != len(want) {
		return fmt.Errorf("got %d elements, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("element %d is %v, want %v", i, got[i], want[i])
		}
	}
	return nil
}

// CheckDevice downloads n float32 from p and compares them with want.
func CheckDevice(d device.Device, p uintptr, want []float32) error {
	got, err := Download(d, p, len(want))
	if err != nil {
		return err
	}
	return Check(got, want)
}

// AllOK tells every process whether every process's err was nil (an MPI
// all-gather); it returns the lowest failing rank, or -1.
func AllOK(err error) (failed int, agreeErr error) {
	flag := []byte{0}
	if err != nil {
		flag[0] = 1
	}
	all, agreeErr := mpiboot.Allgather(flag)
	if agreeErr != nil {
		return -1, agreeErr
	}
	for r, f := range all {
		if f != 0 {
			return r, nil
		}
	}
	return -1, nil
}

// Exit ends an example that failed: it prints err, aborts the MPI job so
// that no other process waits for this one, and exits with status 1.
// It does nothing when err is nil.
func Exit(err error) {
	if err == nil {
		return
	}
	rank, _ := mpiboot.World()
	fmt.Fprintf(os.Stderr, "rank %d: %v\n", rank, err)
	_ = mpiboot.Abort(1) // fails harmlessly when MPI is not running
	os.Exit(1)
}
