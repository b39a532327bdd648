// Package arena is the device memory of one operation's sweep on one rank:
// one allocation for the sweep's largest layout, from the device or, under
// -register, from bufreg.MemAlloc (cuMem VMM on a GPU, as ncclMemAlloc)
// and registered with gccl and with a baseline that registers (NCCL's
// ncclCommRegister). Free undoes every step in reverse order.
package arena
