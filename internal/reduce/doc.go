// Package reduce is element-wise reduction over byte buffers for every
// gccl.DataType and gccl.RedOp, the arithmetic of the host backend and the
// reference that tests check every backend against.
//
// Into and Into3 combine buffers element by element. Avg and the
// pre-multiplied sums (operators from gccl.NumBuiltinOps on) reduce as Sum.
// Scale finishes an Avg once all contributions are in: divide by the number
// of ranks (integer types: truncating division, as NCCL). A pre-multiplied
// sum is NCCL's Σ_r s_r·x_r: MulScalar scales each rank's own input by its
// own scalar before it enters the sum (integers in their type, modulo
// 2^bits). Integer sums and products wrap.
//
// The native Go types are reduced by generic loops that the compiler
// specialises per type, dispatched once per call, never per element. The
// 16- and 8-bit floating-point types (float16, bfloat16, fp8 e4m3 and e5m2)
// are widened to float32 a block at a time, reduced there and rounded back
// to nearest-even. float32 carries more than twice their precision plus
// two bits, so this double rounding gives the correctly rounded result of
// each operation. The conversions follow CUDA's cuda_fp16, cuda_bf16 and
// cuda_fp8 types: float16 and bfloat16 overflow to infinity and turn NaN
// into 0x7fff; the fp8 types saturate to their largest finite value
// (__NV_SATFINITE: ±448 for e4m3, ±57344 for e5m2, infinities included)
// and keep NaN (e4m3 0x7f/0xff, e5m2 0x7e/0x7f with the sign).
// Float16FromFloat32 and friends expose the conversions; a test checks them
// bit for bit against CUDA 13 (testdata/cudaconv.cu records CUDA's results).
//
// Max and Min of floating-point values ignore a NaN operand when the other
// is a number, as fmaxf and fminf do.
//
// Reference, PreMulSumReference, Check and Fill are for tests: Reference computes a collective's
// expected result in float64 (exact integers for the integer types), Check
// compares with a tolerance that follows the type's precision and the
// number of ranks, and Fill writes random values for which every operator
// stays well inside the type's range.
package reduce
