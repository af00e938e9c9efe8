// Philox4x32-10 and the draws made from it, inline because the fills call them once
// per element.
//
// Philox4x32-10 is defined in Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as
// easy as 1, 2, 3" (SC'11) and implemented in their Random123 library: ten rounds of
// two 32x32->64-bit multiplications and a Feistel-like mix of a 128-bit counter under a
// 64-bit key, bumped by Weyl constants between rounds. It passes BigCrush for any key,
// and any counter can be computed directly: what a layout-independent fill needs.
#ifndef SHARDRT_LIB_PRNG_H
#define SHARDRT_LIB_PRNG_H

#include <array>
#include <cmath>
#include <cstdint>

namespace shardrt {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

inline PhiloxCounter philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
  constexpr uint64_t kMultiplier0 = 0xD2511F53, kMultiplier1 = 0xCD9E8D57;
  constexpr uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kWeyl0;
      key[1] += kWeyl1;
    }
    uint64_t product0 = kMultiplier0 * counter[0];
    uint64_t product1 = kMultiplier1 * counter[2];
    counter = {uint32_t(product1 >> 32) ^ counter[1] ^ key[0], uint32_t(product1),
               uint32_t(product0 >> 32) ^ counter[3] ^ key[1], uint32_t(product0)};
  }
  return counter;
}

/// FNV-1a, 64 bits (Fowler, Noll, Vo): the offset basis and prime of the published
/// definition.
inline uint64_t fnv1a64(const char *text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const unsigned char *p = reinterpret_cast<const unsigned char *>(text); *p; ++p) {
    hash ^= *p;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

/// The block for element `index` of the parameter whose path hashes to `pathHash`:
/// the path picks the key, (index, seed) the counter, so different seeds can never
/// share a counter.
inline PhiloxCounter philoxBlock(uint64_t seed, uint64_t pathHash, uint64_t index) {
  return philox4x32_10(
      {uint32_t(index), uint32_t(index >> 32), uint32_t(seed), uint32_t(seed >> 32)},
      {uint32_t(pathHash), uint32_t(pathHash >> 32)});
}

/// Uniform in [0, 1) from one word: its top 24 bits, exactly representable in f32.
inline float unitOf(uint32_t word) { return float(word >> 8) * 0x1p-24f; }

/// The initialisers' and integer inputs' uniform draw of an element: the first word of
/// the element's block.
inline float uniform01(const PhiloxCounter &block) { return unitOf(block[0]); }

/// A dropout mask's uniform draw of element `index` of the mask whose path hashes to
/// `pathHash`: word index % 4 of the block of index / 4. One block gives four
/// neighbouring elements, as masks are drawn anew at every step.
inline float maskUniformAt(uint64_t seed, uint64_t pathHash, uint64_t index) {
  return unitOf(philoxBlock(seed, pathHash, index / 4)[index % 4]);
}

/// maskUniformAt of elements [first, first + n) into `out`: one philoxBlock per four
/// elements, vectorized (prng.cpp). What a step's dropout masks are drawn with.
void maskUniformRun(uint64_t seed, uint64_t pathHash, uint64_t first, int64_t n, float *out);

/// stddev times a standard normal draw for each element of [first, first + n), rounded
/// to float, into `out` (prng.cpp's normal01 is the draw; shardrt_normal01 the same
/// for one element): the normal initialisers and synthetic inputs.
void normalRun(uint64_t seed, uint64_t pathHash, uint64_t first, int64_t n, double stddev,
               float *out);

} // namespace shardrt

#endif // SHARDRT_LIB_PRNG_H
