// The C ABI of the counter-based generator (see prng.h), and its runs of uniform and
// normal draws.
#include "prng.h"

#include "shardrt/shardrt.h"

#include <algorithm>
#include <cstring>

using namespace shardrt;

// Cloned per instruction set and compiled at -O3 (runtime/CMakeLists.txt) so that the
// rounds vectorize, a Philox block per four elements: x86-64-v4 rather than avx512f, as
// its AVX512DQ/VL give the 64-bit products full-width instructions. A step's dropout
// masks are drawn here (bench/gpt times W4's steps, which have dropout).
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default"))) void
shardrt::maskUniformRun(uint64_t seed, uint64_t pathHash, uint64_t first, int64_t n, float *out) {
  // Elements before the first whole block and after the last one, one at a time.
  const int64_t head = std::min<int64_t>(n, int64_t((4 - first % 4) % 4));
  for (int64_t j = 0; j < head; ++j)
    out[j] = maskUniformAt(seed, pathHash, first + uint64_t(j));
  const uint64_t firstBlock = (first + uint64_t(head)) / 4;
  const int64_t blocks = (n - head) / 4;
  float *whole = out + head;
  for (int64_t b = 0; b < blocks; ++b) {
    const PhiloxCounter words = philoxBlock(seed, pathHash, firstBlock + uint64_t(b));
    for (int w = 0; w < 4; ++w)
      whole[4 * b + w] = unitOf(words[w]);
  }
  for (int64_t j = head + 4 * blocks; j < n; ++j)
    out[j] = maskUniformAt(seed, pathHash, first + uint64_t(j));
}

namespace {

/// log(x) for x in [2^-53, 1]: fdlibm's e_log.c without its special cases (x is
/// normal and positive here), so the vectorizer sees straight-line code. x = 2^k * m
/// with m in [sqrt(2)/2, sqrt(2)), f = m - 1 exact, log(1 + f) = 2 atanh(f / (2 + f)).
inline double logOfUnit(double x) {
  constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kLg1 = 6.666666666666735130e-01, kLg2 = 3.999999999940941908e-01,
                   kLg3 = 2.857142874366239149e-01, kLg4 = 2.222219843214978396e-01,
                   kLg5 = 1.818357216161805012e-01, kLg6 = 1.531383769920937332e-01,
                   kLg7 = 1.479819860511658591e-01;
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  int64_t k = int64_t(bits >> 52) - 1023;
  uint64_t mantissa = bits & 0x000fffffffffffffull;
  // m >= sqrt(2) (mantissa above 0x6a09e667f3bcd) takes exponent -1 instead of 0.
  const bool high = mantissa > 0x6a09e667f3bccull;
  k += high;
  uint64_t mBits = mantissa | (high ? 0x3fe0000000000000ull : 0x3ff0000000000000ull);
  double m;
  std::memcpy(&m, &mBits, sizeof m);
  const double f = m - 1.0, s = f / (2.0 + f), z = s * s, w = z * z;
  const double r =
      z * (kLg1 + w * (kLg3 + w * (kLg5 + w * kLg7))) + w * (kLg2 + w * (kLg4 + w * kLg6));
  const double halfSquare = 0.5 * f * f, dk = double(k);
  return dk * kLn2Hi - ((halfSquare - (s * (halfSquare + r) + dk * kLn2Lo)) - f);
}

/// cos(2 pi t) for t in [0, 1): t - q/4 is exact, so the reduction to [-pi/4, pi/4]
/// costs one rounding; fdlibm's k_sin.c and k_cos.c then.
inline double cosOfTurns(double t) {
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  constexpr double kS1 = -1.66666666666666324348e-01, kS2 = 8.33333333332248946124e-03,
                   kS3 = -1.98412698298579493134e-04, kS4 = 2.75573137070700676789e-06,
                   kS5 = -2.50507602534068634195e-08, kS6 = 1.58969099521155010221e-10;
  constexpr double kC1 = 4.16666666666666019037e-02, kC2 = -1.38888888888741095749e-03,
                   kC3 = 2.48015872894767294178e-05, kC4 = -2.75573143513906633035e-07,
                   kC5 = 2.08757232129817482790e-09, kC6 = -1.13596475577881948265e-11;
  const int64_t q = int64_t(t * 4.0 + 0.5); // nearest quarter turn, 0..4
  const double x = kTwoPi * (t - double(q) * 0.25);
  const double z = x * x, w = z * z;
  const double sine = x + z * x * (kS1 + z * (kS2 + z * (kS3 + z * (kS4 + z * (kS5 + z * kS6)))));
  const double r = z * (kC1 + z * (kC2 + z * kC3)) + w * w * (kC4 + z * (kC5 + z * kC6));
  const double halfZ = 0.5 * z, oneMinus = 1.0 - halfZ;
  const double cosine = oneMinus + (((1.0 - oneMinus) - halfZ) + z * r);
  // cos(x + q pi/2): cos, -sin, -cos, sin.
  const double value = (q & 1) ? sine : cosine;
  return ((q + 1) & 2) ? -value : value;
}

/// Standard normal by Box-Muller (cosine branch), in double: u1 in (0, 1] from words 0
/// and 1 (never 0, so the log is finite), u2 in [0, 1) from words 2 and 3. The log and
/// cosine are the ones above, within an ulp of libm's, so that normalRun vectorizes
/// and gives each element the bits shardrt_normal01 gives it.
inline double normal01(const PhiloxCounter &block) {
  uint64_t bits1 = (uint64_t(block[1]) << 32 | block[0]) >> 11;
  uint64_t bits2 = (uint64_t(block[3]) << 32 | block[2]) >> 11;
  double u1 = double(bits1 + 1) * 0x1p-53;
  double u2 = double(bits2) * 0x1p-53;
  return std::sqrt(-2.0 * logOfUnit(u1)) * cosOfTurns(u2);
}

} // namespace

// x86-64-v4 rather than avx512f: without AVX-512DQ the int64 to double conversions go
// element by element, and a draw costs several times as much.
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default"))) void
shardrt::normalRun(uint64_t seed, uint64_t pathHash, uint64_t first, int64_t n, double stddev,
                   float *out) {
  for (int64_t j = 0; j < n; ++j)
    out[j] = float(stddev * normal01(philoxBlock(seed, pathHash, first + uint64_t(j))));
}

extern "C" {

void shardrt_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]) {
  PhiloxCounter block =
      philox4x32_10({counter[0], counter[1], counter[2], counter[3]}, {key[0], key[1]});
  for (int i = 0; i < 4; ++i)
    out[i] = block[i];
}

uint64_t shardrt_hash_path(const char *path) { return fnv1a64(path); }

float shardrt_uniform01(uint64_t seed, uint64_t path_hash, uint64_t index) {
  return uniform01(philoxBlock(seed, path_hash, index));
}

float shardrt_normal01(uint64_t seed, uint64_t path_hash, uint64_t index) {
  return float(normal01(philoxBlock(seed, path_hash, index)));
}

} // extern "C"
