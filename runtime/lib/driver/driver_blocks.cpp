// Allocating and filling this rank's blocks.
#include "driver_blocks.h"
#include "mesh/mesh.h"
#include "random/prng.h"

#include "shardrt/shardrt.h"

#include <cstring>
#include <string>

namespace shardrt {
namespace {

constexpr size_t kAlignment = 64; // a cache line, and enough for any vector load

} // namespace

DrawnRegion drawnRegion(const Block &block) {
  const TensorSpec &spec = *block.spec;
  DrawnRegion region{spec.globalShape, block.local, block.offset};
  if (spec.layer >= 0) {
    region.local.insert(region.local.begin(), 1);
    region.offset.insert(region.offset.begin(), spec.layer);
  }
  return region;
}

void copyFromWhole(const Block &block, const void *whole) {
  const DrawnRegion region = drawnRegion(block);
  forEachRow(region.global, region.local, region.offset,
             [&](int64_t localStart, int64_t globalStart, int64_t length) {
               std::memcpy(static_cast<uint32_t *>(block.data()) + localStart,
                           static_cast<const uint32_t *>(whole) + globalStart, length * 4);
             });
}

namespace {

/// One parameter's block.
void fillParam(const Block &block, uint64_t seed) {
  const TensorSpec &spec = *block.spec;
  const DrawnRegion region = drawnRegion(block);
  const int ndim = static_cast<int>(region.global.size());
  const char *path = spec.name.c_str();
  const int64_t count = block.count();
  float *out = block.floats();
  int64_t fanIn = 0, fanOut = 0;
  const std::vector<int64_t> layer = spec.layerShape();
  if (layer.size() >= 2)
    shardrt_compute_fans(static_cast<int>(layer.size()), layer.data(), &fanIn, &fanOut);
  const int64_t *g = region.global.data(), *l = region.local.data(), *o = region.offset.data();
  switch (spec.init) {
  case InitKind::Zeros:
    return shardrt_fill_zeros_f32(out, count);
  case InitKind::Ones:
    return shardrt_fill_ones_f32(out, count);
  case InitKind::Constant:
    return shardrt_fill_constant_f32(out, count, float(spec.initArg));
  case InitKind::Normal:
    return shardrt_fill_normal_f32(out, ndim, g, l, o, seed, path, float(spec.initArg));
  case InitKind::Uniform:
    return shardrt_fill_uniform_f32(out, ndim, g, l, o, seed, path, float(spec.initArg));
  case InitKind::XavierNormal:
    return shardrt_fill_xavier_normal_f32(out, ndim, g, l, o, seed, path, fanIn, fanOut);
  case InitKind::XavierUniform:
    return shardrt_fill_xavier_uniform_f32(out, ndim, g, l, o, seed, path, fanIn, fanOut);
  case InitKind::LecunNormal:
    return shardrt_fill_lecun_normal_f32(out, ndim, g, l, o, seed, path, fanIn, fanOut);
  case InitKind::HeNormal:
    return shardrt_fill_he_normal_f32(out, ndim, g, l, o, seed, path, fanIn, fanOut);
  }
}

/// One input's block. Uniform numbers are u, and integers floor(u * high), with u the
/// uniform draw the initialisers use (u has 24 bits and high at most 2^31, so the
/// product is exact in double and below high).
void fillInput(const Block &block, uint64_t seed) {
  const TensorSpec &spec = *block.spec;
  const DrawnRegion region = drawnRegion(block);
  std::string path = "inputs." + spec.name;
  if (spec.fill == FillKind::Normal) {
    shardrt_fill_normal_f32(block.floats(), static_cast<int>(region.global.size()),
                            region.global.data(), region.local.data(), region.offset.data(), seed,
                            path.c_str(), 1.0f);
    return;
  }
  const uint64_t key = fnv1a64(path.c_str());
  forEachRow(region.global, region.local, region.offset,
             [&](int64_t localStart, int64_t globalStart, int64_t n) {
               if (spec.fill == FillKind::Uniform)
                 return maskUniformRun(seed, key, uint64_t(globalStart), n,
                                       block.floats() + localStart);
               for (int64_t j = 0; j < n; ++j) {
                 float u = uniform01(philoxBlock(seed, key, uint64_t(globalStart + j)));
                 static_cast<int32_t *>(block.data())[localStart + j] =
                     int32_t(double(u) * double(spec.high));
               }
             });
}

} // namespace

/// At least one line, so that an empty tensor still has a valid pointer.
Block allocateBlock(const TensorSpec &spec, const Placement &place) {
  Block block;
  block.spec = &spec;
  block.local = localShape(spec, place.meshSizes);
  block.offset = blockOffset(spec, place.meshSizes, place.coords);
  size_t bytes = (size_t(block.count()) * 4 + kAlignment - 1) / kAlignment * kAlignment;
  bytes = bytes ? bytes : kAlignment;
  void *pointer = std::aligned_alloc(kAlignment, bytes);
  if (!pointer)
    fatal("cannot allocate %zu bytes for '%s' on rank %d", bytes, spec.name.c_str(),
          shardrt_rank());
  std::memset(pointer, 0, bytes);
  block.memory.reset(pointer);
  return block;
}

std::vector<Block> allocateBlocks(const std::vector<TensorSpec> &specs, const Placement &place) {
  std::vector<Block> blocks;
  for (const TensorSpec &spec : specs)
    blocks.push_back(allocateBlock(spec, place));
  return blocks;
}

std::vector<void *> pointersOf(std::initializer_list<const std::vector<Block> *> groups) {
  std::vector<void *> pointers;
  for (const std::vector<Block> *group : groups)
    for (const Block &block : *group)
      pointers.push_back(block.data());
  return pointers;
}

void fillParams(const std::vector<Block> &params, uint64_t seed) {
  for (const Block &block : params)
    fillParam(block, seed);
}

void fillInputs(const std::vector<Block> &inputs, uint64_t seed) {
  for (const Block &block : inputs)
    fillInput(block, seed);
}

void fillInputs(const std::vector<Block> &inputs, uint64_t seed, const std::vector<size_t> &which) {
  for (size_t i : which)
    fillInput(inputs[i], seed);
}

uint64_t stepSeed(uint64_t seed, int64_t step) {
  PhiloxCounter draw = philoxBlock(seed, fnv1a64("steps"), uint64_t(step));
  return uint64_t(draw[1]) << 32 | draw[0];
}

const TensorSpec &lossSpec() {
  static const TensorSpec spec = [] {
    TensorSpec loss;
    loss.name = "loss";
    return loss;
  }();
  return spec;
}

} // namespace shardrt
