#include "driver_sampling.h"

#include "random/prng.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace shardrt {

int32_t drawToken(const float *logits, int64_t vocab, const Sampling &sampling, double u) {
  if (sampling.temperature == 0)
    return int32_t(std::max_element(logits, logits + vocab) - logits);

  // Token ids from the most to the least likely (ties: the lower id first).
  std::vector<int32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  int64_t kept = sampling.topK > 0 ? std::min(sampling.topK, vocab) : vocab;

  // Softmax of the kept logits over the temperature, in double.
  const double top = logits[order[0]] / sampling.temperature;
  std::vector<double> weight(kept);
  double total = 0;
  for (int64_t i = 0; i < kept; ++i)
    total += weight[i] = std::exp(logits[order[i]] / sampling.temperature - top);

  // Nucleus: the shortest prefix whose probability reaches top-p (at least one token).
  if (sampling.topP < 1) {
    double reached = 0;
    int64_t i = 0;
    while (i < kept && reached < sampling.topP * total)
      reached += weight[i++];
    kept = std::max<int64_t>(i, 1);
    total = std::accumulate(weight.begin(), weight.begin() + kept, 0.0);
  }

  // Inverse distribution function over the kept tokens, most likely first.
  double below = u * total;
  for (int64_t i = 0; i < kept; ++i) {
    if (below < weight[i])
      return order[i];
    below -= weight[i];
  }
  return order[kept - 1]; // u * total rounded past the sum
}

double tokenUniform(uint64_t seed, int64_t sample, int64_t position) {
  static const uint64_t kStream = fnv1a64("generate");
  // One block per (sample, position): a context is far below 2^32 positions.
  const PhiloxCounter block =
      philoxBlock(seed, kStream, (uint64_t(sample) << 32) | uint32_t(position));
  return double((uint64_t(block[0]) << 21) ^ (block[1] >> 11)) * 0x1p-53; // 53 bits
}

} // namespace shardrt
