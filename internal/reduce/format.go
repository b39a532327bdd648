package reduce

import (
	"math"
	"sync"
)

// format describes a small binary floating-point format with 1 sign bit,
// exp exponent bits and mant explicit mantissa bits.
type format struct {
	mant, exp uint
	bias      int
	maxBits   uint32 // largest finite encoding, sign clear
	satfinite bool   // overflow and ±inf give ±max finite (CUDA __NV_SATFINITE)
	ieee      bool   // the all-ones exponent holds inf and NaN; else only S.1…1 is NaN (e4m3)
	// nan is the encoding of a NaN whose float32 bits are u and sign bit sign.
	nan func(u, sign uint32) uint32
}

var (
	f16Format = &format{mant: 10, exp: 5, bias: 15, maxBits: 0x7bff, ieee: true,
		nan: func(u, sign uint32) uint32 { return 0x7fff }}
	bf16Format = &format{mant: 7, exp: 8, bias: 127, maxBits: 0x7f7f, ieee: true,
		nan: func(u, sign uint32) uint32 { return 0x7fff }}
	e4m3Format = &format{mant: 3, exp: 4, bias: 7, maxBits: 0x7e, satfinite: true,
		nan: func(u, sign uint32) uint32 { return 0x7f | sign }}
	e5m2Format = &format{mant: 2, exp: 5, bias: 15, maxBits: 0x7b, satfinite: true, ieee: true,
		nan: func(u, sign uint32) uint32 { return 0x7e | (u>>21)&1 | sign }}
)

func (f *format) signBit() uint32 { return 1 << (f.mant + f.exp) }
func (f *format) expMask() uint32 { return 1<<f.exp - 1 }

func (f *format) overflow(sign uint32) uint32 {
	if f.satfinite || !f.ieee {
		return f.maxBits | sign
	}
	return f.expMask()<<f.mant | sign
}

// fromFloat32 rounds x to the format, to nearest even, by integer
// arithmetic on its bits.
func (f *format) fromFloat32(x float32) uint32 {
	u := math.Float32bits(x)
	sign := (u >> 31) * f.signBit()
	a := u & 0x7fffffff
	switch {
	case a > 0x7f800000:
		return f.nan(u, sign)
	case a == 0x7f800000:
		return f.overflow(sign)
	case a == 0:
		return sign
	}
	e, m := int(a>>23), a&0x7fffff
	if e == 0 {
		e = 1 // float32 subnormal: no implicit bit
	} else {
		m |= 0x800000
	}
	e -= 127 // x = m * 2^(e-23)
	emin := 1 - f.bias
	shift := 23 - int(f.mant)
	if e < emin {
		shift += emin - e
	}
	r := roundShift(m, shift)
	enc := r // subnormal; rounding up to 1<<mant gives the smallest normal
	if e >= emin {
		enc = uint32(e+f.bias-1)<<f.mant + r // r holds the implicit bit
	}
	if enc > f.maxBits {
		return f.overflow(sign)
	}
	return enc | sign
}

// roundShift returns m >> s rounded to nearest, ties to even, for
// m < 1<<24 and s >= 1, without branches: adding half an ulp less one,
// plus the lowest kept bit, carries exactly when rounding goes up.
func roundShift(m uint32, s int) uint32 {
	if s >= 32 {
		return 0
	}
	return (m + (uint32(1)<<(s-1) - 1) + (m>>s)&1) >> s
}

// fromFloat64 rounds x to the format, to nearest even, by float64
// arithmetic: one rounding, whatever the precision of x. It is independent
// of fromFloat32, which tests check against it.
func (f *format) fromFloat64(x float64) uint32 {
	var sign uint32
	if math.Signbit(x) {
		sign = f.signBit()
	}
	a := math.Abs(x)
	switch {
	case math.IsNaN(x):
		return f.nan(0x7fc00000|sign>>(f.mant+f.exp)<<31, sign)
	case math.IsInf(a, 1):
		return f.overflow(sign)
	case a == 0:
		return sign
	}
	_, e := math.Frexp(a)
	e-- // a = 1.xxx * 2^e
	emin := 1 - f.bias
	q := max(e, emin)
	r := uint32(math.RoundToEven(math.Ldexp(a, int(f.mant)-q)))
	enc := r
	if e >= emin {
		enc = uint32(q+f.bias-1)<<f.mant + r
	}
	if enc > f.maxBits {
		return f.overflow(sign)
	}
	return enc | sign
}

// toFloat64 returns the value an encoding stands for (exactly).
func (f *format) toFloat64(b uint32) float64 {
	e := int(b>>f.mant) & int(f.expMask())
	m := b & (1<<f.mant - 1)
	var v float64
	switch {
	case f.ieee && e == int(f.expMask()):
		v = math.Inf(1)
		if m != 0 {
			return math.NaN()
		}
	case !f.ieee && e == int(f.expMask()) && m == 1<<f.mant-1:
		return math.NaN()
	case e == 0:
		v = math.Ldexp(float64(m), 1-f.bias-int(f.mant))
	default:
		v = math.Ldexp(float64(m|1<<f.mant), e-f.bias-int(f.mant))
	}
	if b&f.signBit() != 0 {
		v = -v
	}
	return v
}

// table returns the float32 value of every encoding.
func (f *format) table() []float32 {
	t := make([]float32, 1<<(1+f.exp+f.mant))
	for i := range t {
		t[i] = float32(f.toFloat64(uint32(i)))
	}
	return t
}

var (
	f16Table  = sync.OnceValue(f16Format.table)
	e4m3Table = sync.OnceValue(e4m3Format.table)
	e5m2Table = sync.OnceValue(e5m2Format.table)
)

// Float16FromFloat32 rounds x to IEEE binary16 (as CUDA's __float2half_rn).
func Float16FromFloat32(x float32) uint16 { return uint16(f16Format.fromFloat32(x)) }

// Float16ToFloat32 widens an IEEE binary16 value (exactly).
func Float16ToFloat32(h uint16) float32 { return f16Table()[h] }

// BFloat16FromFloat32 rounds x to bfloat16 (as CUDA's __float2bfloat16_rn).
func BFloat16FromFloat32(x float32) uint16 { return uint16(bf16Format.fromFloat32(x)) }

// BFloat16ToFloat32 widens a bfloat16 value (exactly).
func BFloat16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Float8E4M3FromFloat32 rounds x to fp8 e4m3, saturating (as __nv_fp8_e4m3).
func Float8E4M3FromFloat32(x float32) uint8 { return uint8(e4m3Format.fromFloat32(x)) }

// Float8E4M3ToFloat32 widens an fp8 e4m3 value (exactly).
func Float8E4M3ToFloat32(b uint8) float32 { return e4m3Table()[b] }

// Float8E5M2FromFloat32 rounds x to fp8 e5m2, saturating (as __nv_fp8_e5m2).
func Float8E5M2FromFloat32(x float32) uint8 { return uint8(e5m2Format.fromFloat32(x)) }

// Float8E5M2ToFloat32 widens an fp8 e5m2 value (exactly).
func Float8E5M2ToFloat32(b uint8) float32 { return e5m2Table()[b] }
