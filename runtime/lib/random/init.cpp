// Parameter initialisers, named as in the language.
//
// A fill visits its shard's elements in local row-major order, computes each one's
// global row-major index from the shard's offset, and draws the value at that index
// (prng.h). So a value depends only on (seed, path, global index): the eight blocks of
// a parameter split over eight ranks hold exactly the numbers of the unsharded
// parameter, and a sharded run starts where the single-rank reference does.
#include "mesh/mesh.h"
#include "prng.h"

#include "shardrt/shardrt.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace shardrt {
namespace {

/// Fills the shard row by row: drawRow(global index of the row's first element, its
/// length, where it goes) writes each contiguous run of global indices.
template <typename DrawRow>
void fillShard(const char *caller, float *out, int ndim, const int64_t *globalShape,
               const int64_t *localShape, const int64_t *localOffset, DrawRow drawRow) {
  if (ndim < 0 || (ndim > 0 && (!globalShape || !localShape || !localOffset)))
    fatal("%s: a shard needs its global shape, local shape and offset (ndim = %d)", caller, ndim);
  for (int d = 0; d < ndim; ++d)
    if (localShape[d] < 0 || localOffset[d] < 0 || localOffset[d] + localShape[d] > globalShape[d])
      fatal("%s: dimension %d: a block of %lld at offset %lld does not fit in %lld", caller, d,
            static_cast<long long>(localShape[d]), static_cast<long long>(localOffset[d]),
            static_cast<long long>(globalShape[d]));
  if (ndim == 0)
    return drawRow(0, 1, out);
  if (std::any_of(localShape, localShape + ndim, [](int64_t n) { return n == 0; }))
    return;

  std::vector<int64_t> globalStride(ndim, 1);
  for (int d = ndim - 2; d >= 0; --d)
    globalStride[d] = globalStride[d + 1] * globalShape[d + 1];

  // Walk the local rows (the last dimension is contiguous in both the shard and the
  // global tensor); `position` counts over the leading dimensions like an odometer.
  const int last = ndim - 1;
  std::vector<int64_t> position(ndim, 0);
  for (;;) {
    int64_t rowStart = 0;
    for (int d = 0; d < ndim; ++d)
      rowStart += (localOffset[d] + position[d]) * globalStride[d];
    drawRow(uint64_t(rowStart), localShape[last], out);
    out += localShape[last];
    int d = last - 1;
    while (d >= 0 && ++position[d] == localShape[d])
      position[d--] = 0;
    if (d < 0)
      return;
  }
}

const char *requirePath(const char *caller, const char *path) {
  if (!path)
    fatal("%s: the parameter path is NULL", caller);
  return path;
}

void fillNormal(const char *caller, float *out, int ndim, const int64_t *globalShape,
                const int64_t *localShape, const int64_t *localOffset, uint64_t seed,
                const char *path, double stddev) {
  uint64_t key = fnv1a64(requirePath(caller, path));
  fillShard(
      caller, out, ndim, globalShape, localShape, localOffset,
      [&](uint64_t first, int64_t n, float *row) { normalRun(seed, key, first, n, stddev, row); });
}

/// U(-limit, limit), computed in double and rounded once.
void fillSymmetricUniform(const char *caller, float *out, int ndim, const int64_t *globalShape,
                          const int64_t *localShape, const int64_t *localOffset, uint64_t seed,
                          const char *path, double limit) {
  uint64_t key = fnv1a64(requirePath(caller, path));
  fillShard(caller, out, ndim, globalShape, localShape, localOffset,
            [&](uint64_t first, int64_t n, float *row) {
              for (int64_t j = 0; j < n; ++j)
                row[j] = float(limit * (2.0 * uniform01(philoxBlock(seed, key, first + j)) - 1.0));
            });
}

void requireFans(const char *caller, int64_t fanIn, int64_t fanOut) {
  if (fanIn < 1 || fanOut < 1)
    fatal("%s: fans must be positive, not fan_in = %lld, fan_out = %lld", caller,
          static_cast<long long>(fanIn), static_cast<long long>(fanOut));
}

void requireCount(const char *caller, int64_t count) {
  if (count < 0)
    fatal("%s: negative element count %lld", caller, static_cast<long long>(count));
}

} // namespace
} // namespace shardrt

using namespace shardrt;

extern "C" {

void shardrt_fill_zeros_f32(float *out, int64_t count) {
  requireCount("shardrt_fill_zeros_f32", count);
  std::fill(out, out + count, 0.0f);
}

void shardrt_fill_ones_f32(float *out, int64_t count) {
  requireCount("shardrt_fill_ones_f32", count);
  std::fill(out, out + count, 1.0f);
}

void shardrt_fill_constant_f32(float *out, int64_t count, float value) {
  requireCount("shardrt_fill_constant_f32", count);
  std::fill(out, out + count, value);
}

void shardrt_fill_normal_f32(float *out, int ndim, const int64_t *global_shape,
                             const int64_t *local_shape, const int64_t *local_offset, uint64_t seed,
                             const char *path, float stddev) {
  fillNormal("shardrt_fill_normal_f32", out, ndim, global_shape, local_shape, local_offset, seed,
             path, stddev);
}

void shardrt_fill_uniform_f32(float *out, int ndim, const int64_t *global_shape,
                              const int64_t *local_shape, const int64_t *local_offset,
                              uint64_t seed, const char *path, float scale) {
  fillSymmetricUniform("shardrt_fill_uniform_f32", out, ndim, global_shape, local_shape,
                       local_offset, seed, path, scale);
}

void shardrt_fill_xavier_normal_f32(float *out, int ndim, const int64_t *global_shape,
                                    const int64_t *local_shape, const int64_t *local_offset,
                                    uint64_t seed, const char *path, int64_t fan_in,
                                    int64_t fan_out) {
  const char *caller = "shardrt_fill_xavier_normal_f32";
  requireFans(caller, fan_in, fan_out);
  fillNormal(caller, out, ndim, global_shape, local_shape, local_offset, seed, path,
             std::sqrt(2.0 / double(fan_in + fan_out)));
}

void shardrt_fill_xavier_uniform_f32(float *out, int ndim, const int64_t *global_shape,
                                     const int64_t *local_shape, const int64_t *local_offset,
                                     uint64_t seed, const char *path, int64_t fan_in,
                                     int64_t fan_out) {
  const char *caller = "shardrt_fill_xavier_uniform_f32";
  requireFans(caller, fan_in, fan_out);
  fillSymmetricUniform(caller, out, ndim, global_shape, local_shape, local_offset, seed, path,
                       std::sqrt(6.0 / double(fan_in + fan_out)));
}

void shardrt_fill_lecun_normal_f32(float *out, int ndim, const int64_t *global_shape,
                                   const int64_t *local_shape, const int64_t *local_offset,
                                   uint64_t seed, const char *path, int64_t fan_in,
                                   int64_t fan_out) {
  const char *caller = "shardrt_fill_lecun_normal_f32";
  requireFans(caller, fan_in, fan_out);
  fillNormal(caller, out, ndim, global_shape, local_shape, local_offset, seed, path,
             std::sqrt(1.0 / double(fan_in)));
}

void shardrt_fill_he_normal_f32(float *out, int ndim, const int64_t *global_shape,
                                const int64_t *local_shape, const int64_t *local_offset,
                                uint64_t seed, const char *path, int64_t fan_in, int64_t fan_out) {
  const char *caller = "shardrt_fill_he_normal_f32";
  requireFans(caller, fan_in, fan_out);
  fillNormal(caller, out, ndim, global_shape, local_shape, local_offset, seed, path,
             std::sqrt(2.0 / double(fan_in)));
}

void shardrt_compute_fans(int ndim, const int64_t *shape, int64_t *fan_in, int64_t *fan_out) {
  if (ndim < 2 || !shape)
    fatal("shardrt_compute_fans: a kernel has at least 2 dimensions (in, out), not %d", ndim);
  int64_t receptiveField = 1;
  for (int d = 0; d < ndim - 2; ++d)
    receptiveField *= shape[d];
  *fan_in = shape[ndim - 2] * receptiveField;
  *fan_out = shape[ndim - 1] * receptiveField;
}

} // extern "C"
