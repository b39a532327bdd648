// Instantiation tables: every kernel template is instantiated for every
// data type x operator under a predictable extern "C" name:
// gccl_<kernel>_<type>_<op>, e.g. gccl_allreduce_oneshot_f32_sum.
#pragma once

#include "common.cuh"

// GCCL_TYPES(X, K): X(K, C++ type, name) for each gccl.DataType, in its order.
#define GCCL_TYPES(X, K) \
	X(K, int8_t, i8) \
	X(K, uint8_t, u8) \
	X(K, int32_t, i32) \
	X(K, uint32_t, u32) \
	X(K, int64_t, i64) \
	X(K, uint64_t, u64) \
	X(K, __half, f16) \
	X(K, float, f32) \
	X(K, double, f64) \
	X(K, __nv_bfloat16, bf16) \
	X(K, __nv_fp8_e4m3, e4m3) \
	X(K, __nv_fp8_e5m2, e5m2)

// GCCL_OPS(Y, K, T, tn): Y(K, T, tn, OP, name) for each gccl.RedOp, in its order.
#define GCCL_OPS(Y, K, T, tn) \
	Y(K, T, tn, OP_SUM, sum) \
	Y(K, T, tn, OP_PROD, prod) \
	Y(K, T, tn, OP_MAX, max) \
	Y(K, T, tn, OP_MIN, min) \
	Y(K, T, tn, OP_AVG, avg) \
	Y(K, T, tn, OP_PREMULSUM, premulsum)

// A reduction kernel K has a device template K<T, OP>(c, count, red) and
// gets the entry point gccl_K_<type>_<op>(gcclComm, count, scalarBits,
// scalarPtr): premulsum's factor is read in the kernel from scalarPtr
// (device memory) or, when that is null, is the low sizeof(T) bytes of
// scalarBits (a host-immediate value); other operators ignore both.
#define GCCL_RED_ENTRY(K, T, tn, OP, on) \
	extern "C" __global__ void __launch_bounds__(GCCL_THREADS) gccl_##K##_##tn##_##on( \
		const gcclComm c, unsigned long long count, unsigned long long scalarBits, const void *scalarPtr) { \
		K<T, OP>(c, (size_t)count, Red<T, OP>(scalarBits, scalarPtr, c.nranks)); \
	}
#define GCCL_RED_TYPE(K, T, tn) GCCL_OPS(GCCL_RED_ENTRY, K, T, tn)
#define GCCL_INSTANTIATE_RED(K) GCCL_TYPES(GCCL_RED_TYPE, K)
