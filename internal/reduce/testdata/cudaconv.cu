// cudaconv writes, to stdout, CUDA's host-side conversions for the probe
// set that reduce's TestConversionsMatchCUDA enumerates, in the same order:
//  1. every float16 and bfloat16 encoding widened to float32 (4 bytes each, LE);
//  2. every fp8 e4m3 and e5m2 encoding widened to float32;
//  3. for each probe float32 x: __float2half_rn(x) (2 bytes), __float2bfloat16_rn(x)
//     (2 bytes), __nv_fp8_e4m3(x) and __nv_fp8_e5m2(x) (1 byte each).
// Probes: every top-19-bit pattern (sign, exponent, 10 mantissa bits) with
// the low 13 bits one of 0, 1, 0xfff, 0x1000, 0x1001, 0x1fff.
// Build and run where nvcc exists: nvcc -o cudaconv cudaconv.cu && ./cudaconv > out.bin
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void put(const void *p, size_t n) { fwrite(p, 1, n, stdout); }

static uint32_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

int main(void) {
  for (uint32_t h = 0; h < 65536; h++) {
    __half_raw r; r.x = (unsigned short)h;
    uint32_t u = bits(__half2float(__half(r)));
    put(&u, 4);
  }
  for (uint32_t h = 0; h < 65536; h++) {
    __nv_bfloat16_raw r; r.x = (unsigned short)h;
    uint32_t u = bits(__bfloat162float(__nv_bfloat16(r)));
    put(&u, 4);
  }
  for (uint32_t b = 0; b < 256; b++) {
    __nv_fp8_e4m3 v; v.__x = (__nv_fp8_storage_t)b;
    uint32_t u = bits((float)v);
    put(&u, 4);
  }
  for (uint32_t b = 0; b < 256; b++) {
    __nv_fp8_e5m2 v; v.__x = (__nv_fp8_storage_t)b;
    uint32_t u = bits((float)v);
    put(&u, 4);
  }
  const uint32_t tails[] = {0, 1, 0xfff, 0x1000, 0x1001, 0x1fff};
  for (uint32_t hi = 0; hi < (1u << 19); hi++) {
    for (int t = 0; t < 6; t++) {
      uint32_t u = hi << 13 | tails[t];
      float x; memcpy(&x, &u, 4);
      __half_raw h = (__half_raw)__float2half_rn(x);
      __nv_bfloat16_raw b = (__nv_bfloat16_raw)__float2bfloat16_rn(x);
      unsigned char e4 = __nv_fp8_e4m3(x).__x, e5 = __nv_fp8_e5m2(x).__x;
      put(&h.x, 2); put(&b.x, 2); put(&e4, 1); put(&e5, 1);
    }
  }
  return 0;
}
