// Drawing the next token from a position's logits, as nanoGPT's sample.py and Hugging
// Face's generate do: the logits divided by the temperature, then only the top-k, then
// only the smallest set of most likely tokens whose probabilities reach top-p, then one
// draw. The draw is the inverse of the distribution function at a uniform number that
// depends on (seed, sample, position) alone, so the same logits give the same token on
// every mesh.
#ifndef SHARDRT_LIB_DRIVER_SAMPLING_H
#define SHARDRT_LIB_DRIVER_SAMPLING_H

#include <cstdint>

namespace shardrt {

struct Sampling {
  double temperature = 1; // 0: the most likely token (the lowest id among ties)
  int64_t topK = 0;       // 0: all
  double topP = 1;        // 1: all
};

/// The token drawn from `logits[0, vocab)` with the uniform number `u` in [0, 1).
int32_t drawToken(const float *logits, int64_t vocab, const Sampling &sampling, double u);

/// The uniform number of sample `sample`'s token at `position` under `seed`.
double tokenUniform(uint64_t seed, int64_t sample, int64_t position);

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_SAMPLING_H
