/* kevo_prelude.h: read by NVRTC before every CUDA candidate (--pre-include).
 *
 * nvcc compiles a .cu file with the C library's headers already in (cuda_runtime.h pulls in
 * <math.h>, <limits.h>, <stdlib.h>), so ordinary CUDA writes -INFINITY, INT_MAX, M_PI or
 * std::exp with no #include. NVRTC has none of that: this file gives it back, and the files
 * beside it stand in for the C and C++ headers a kernel may name (cuda_compile.h lists them).
 * Written for kevo: the values are IEEE-754 binary32/binary64 and LP64 facts; the limits
 * macros come from the toolkit's own <cuda/std/climits>. A kernel that defines one of these
 * names again gets NVRTC's warning (as nvcc gives for <math.h>'s), and its own from there on. */
#pragma once

#include <cuda/std/climits>

/* ---- <stdint.h> types (the same types as the toolkit's <cuda/std/cstdint>) ---- */
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef long long intptr_t;
typedef unsigned long long uintptr_t;
typedef long long intmax_t;
typedef unsigned long long uintmax_t;

/* ---- <math.h>: special values as constant expressions, and the usual constants ---- */
#ifndef INFINITY
#define INFINITY (__builtin_bit_cast(float, 0x7f800000u))
#endif
#ifndef NAN
#define NAN (__builtin_bit_cast(float, 0x7fc00000u))
#endif
#ifndef HUGE_VALF
#define HUGE_VALF INFINITY
#endif
#ifndef HUGE_VAL
#define HUGE_VAL (__builtin_bit_cast(double, 0x7ff0000000000000ull))
#endif
#ifndef M_PI
#define M_E 2.718281828459045235360
#define M_LOG2E 1.442695040888963407360
#define M_LOG10E 0.434294481903251827651
#define M_LN2 0.693147180559945309417
#define M_LN10 2.302585092994045684018
#define M_PI 3.141592653589793238463
#define M_PI_2 1.570796326794896619231
#define M_PI_4 0.785398163397448309616
#define M_1_PI 0.318309886183790671538
#define M_2_PI 0.636619772367581343076
#define M_2_SQRTPI 1.128379167095512573896
#define M_SQRT2 1.414213562373095048802
#define M_SQRT1_2 0.707106781186547524401
#endif

/* ---- <float.h>: from the compiler-style names <cuda/std/climits> defines under NVRTC ---- */
#ifndef FLT_MAX
#define FLT_RADIX __FLT_RADIX__
#define FLT_MANT_DIG __FLT_MANT_DIG__
#define FLT_DIG __FLT_DIG__
#define FLT_MIN __FLT_MIN__
#define FLT_MAX __FLT_MAX__
#define FLT_EPSILON __FLT_EPSILON__
#define FLT_TRUE_MIN __FLT_DENORM_MIN__
#define FLT_MIN_EXP __FLT_MIN_EXP__
#define FLT_MAX_EXP __FLT_MAX_EXP__
#define FLT_MIN_10_EXP __FLT_MIN_10_EXP__
#define FLT_MAX_10_EXP __FLT_MAX_10_EXP__
#endif
#ifndef DBL_MAX
#define DBL_MANT_DIG __DBL_MANT_DIG__
#define DBL_DIG __DBL_DIG__
#define DBL_MIN __DBL_MIN__
#define DBL_MAX __DBL_MAX__
#define DBL_EPSILON __DBL_EPSILON__
#define DBL_TRUE_MIN __DBL_DENORM_MIN__
#define DBL_MIN_EXP __DBL_MIN_EXP__
#define DBL_MAX_EXP __DBL_MAX_EXP__
#define DBL_MIN_10_EXP __DBL_MIN_10_EXP__
#define DBL_MAX_10_EXP __DBL_MAX_10_EXP__
#endif

/* ---- std:: names for what CUDA declares globally (as <cmath>, <cstdlib>, <cstdint> do) ---- */
namespace std {
using ::abs;
using ::acos;
using ::acosh;
using ::asin;
using ::asinh;
using ::atan;
using ::atan2;
using ::atanh;
using ::cbrt;
using ::ceil;
using ::copysign;
using ::cos;
using ::cosh;
using ::erf;
using ::erfc;
using ::exp;
using ::exp2;
using ::expm1;
using ::fabs;
using ::fdim;
using ::floor;
using ::fma;
using ::fmax;
using ::fmin;
using ::fmod;
using ::frexp;
using ::hypot;
using ::ilogb;
using ::isfinite;
using ::isinf;
using ::isnan;
using ::labs;
using ::ldexp;
using ::lgamma;
using ::llabs;
using ::llrint;
using ::llround;
using ::log;
using ::log10;
using ::log1p;
using ::log2;
using ::logb;
using ::lrint;
using ::lround;
using ::max;
using ::min;
using ::modf;
using ::nearbyint;
using ::nextafter;
using ::pow;
using ::remainder;
using ::rint;
using ::round;
using ::scalbn;
using ::signbit;
using ::sin;
using ::sinh;
using ::sqrt;
using ::tan;
using ::tanh;
using ::tgamma;
using ::trunc;
using ::int8_t;
using ::int16_t;
using ::int32_t;
using ::int64_t;
using ::uint8_t;
using ::uint16_t;
using ::uint32_t;
using ::uint64_t;
using ::intptr_t;
using ::uintptr_t;
using ::intmax_t;
using ::uintmax_t;
using ::size_t;
using ::ptrdiff_t;
} // namespace std
