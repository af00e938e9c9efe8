// shardrt_main: the `main` of a compiled program (forward mode).
//
//  1. MPI comes up first, so that errors every rank sees alike (flags, manifest) are
//     printed once, by rank 0, and every rank leaves with the same status.
//  2. Flags, then the manifest, are parsed and checked completely before the mesh is set
//     up: past this point only the output path (step 3) can fail on the input alone.
//  3. shardrt_init sets up the manifest's mesh (and stops if mpirun started another
//     number of ranks); rank 0 opens the output now, so a bad path fails before the run.
//  4. Every argument and result gets a block of this rank's size; parameters and inputs
//     are filled by global element index, so every mesh starts from the same numbers.
//  5. entry(buffers) runs once; the results are gathered to rank 0 and written as JSON.
#include "driver_flags.h"
#include "driver_layout.h"
#include "driver_manifest.h"
#include "driver_output.h"
#include "mesh.h"
#include "prng.h"

#include "shardrt/driver.h"
#include "shardrt/shardrt.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace shardrt {
namespace {

constexpr size_t kAlignment = 64; // a cache line, and enough for any vector load

struct FreeDeleter {
  void operator()(void *pointer) const { std::free(pointer); }
};
using Buffer = std::unique_ptr<void, FreeDeleter>;

/// A zeroed, aligned block of `count` 4-byte elements (at least one line, so that an
/// empty tensor still has a valid pointer).
Buffer allocateBlock(const TensorSpec &spec, int64_t count) {
  size_t bytes = (size_t(count) * 4 + kAlignment - 1) / kAlignment * kAlignment;
  bytes = bytes ? bytes : kAlignment;
  void *pointer = std::aligned_alloc(kAlignment, bytes);
  if (!pointer)
    fatal("cannot allocate %zu bytes for '%s' on rank %d", bytes, spec.name.c_str(),
          shardrt_rank());
  std::memset(pointer, 0, bytes);
  return Buffer(pointer);
}

/// A parameter's block; one layer of a stack is the block [layer, offset...] of shape
/// [1, local...] in the stack, and takes its fans from one layer's shape.
void fillParam(const TensorSpec &spec, const Shape &local, const Shape &offset, float *out,
               uint64_t seed) {
  const Shape &global = spec.globalShape;
  Shape shardShape = local, shardOffset = offset;
  if (spec.layer >= 0) {
    shardShape.insert(shardShape.begin(), 1);
    shardOffset.insert(shardOffset.begin(), spec.layer);
  }
  const int ndim = static_cast<int>(global.size());
  const char *path = spec.name.c_str();
  const int64_t count = numElements(local);
  int64_t fanIn = 0, fanOut = 0;
  if (spec.shape.size() >= 2)
    shardrt_compute_fans(static_cast<int>(spec.shape.size()), spec.shape.data(), &fanIn, &fanOut);
  const int64_t *g = global.data(), *l = shardShape.data(), *o = shardOffset.data();
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

/// An input's block, keyed by the path "inputs.NAME". Integers are floor(u * high) of
/// the same uniform draw the initialisers use (u has 24 bits and high at most 2^31, so
/// the product is exact in double and below high).
void fillInput(const TensorSpec &spec, const Shape &local, const Shape &offset, void *out,
               uint64_t seed) {
  std::string path = "inputs." + spec.name;
  if (spec.fill == FillKind::Normal) {
    shardrt_fill_normal_f32(static_cast<float *>(out), static_cast<int>(spec.shape.size()),
                            spec.shape.data(), local.data(), offset.data(), seed, path.c_str(),
                            1.0f);
    return;
  }
  const uint64_t key = fnv1a64(path.c_str());
  int32_t *values = static_cast<int32_t *>(out);
  forEachRow(spec.shape, local, offset, [&](int64_t localStart, int64_t globalStart, int64_t n) {
    for (int64_t j = 0; j < n; ++j) {
      double u = uniform01(philoxBlock(seed, key, uint64_t(globalStart + j)));
      values[localStart + j] = int32_t(u * double(spec.high));
    }
  });
}

/// Rank 0 opens the output; every rank learns whether it could, so all leave together.
std::FILE *openOutput(const DriverOptions &options, int rank, bool &ok) {
  std::FILE *out = nullptr;
  int opened = 1;
  if (rank == 0) {
    out = options.output.empty() ? stdout : std::fopen(options.output.c_str(), "w");
    if (!out) {
      std::fprintf(stderr, "shardrt: error: cannot write '%s': %s\n", options.output.c_str(),
                   std::strerror(errno));
      opened = 0;
    }
  }
  MPI_Bcast(&opened, 1, MPI_INT, 0, MPI_COMM_WORLD);
  ok = opened != 0;
  return out;
}

int run(int argc, char **argv, const char *manifestJson, shardrt_entry_fn entry, int rank) {
  DriverOptions options;
  Manifest manifest;
  try {
    options = parseFlags(argc, argv);
  } catch (const UsageError &error) {
    if (rank == 0)
      std::fprintf(stderr, "shardrt: error: %s\n", error.what());
    return 2;
  }
  if (options.help) {
    if (rank == 0)
      std::fputs(usageText(argc > 0 ? argv[0] : "program").c_str(), stdout);
    return 0;
  }
  try {
    manifest = parseManifest(manifestJson);
  } catch (const ManifestError &error) {
    if (rank == 0)
      std::fprintf(stderr, "shardrt: error: %s\n", error.what());
    return 1;
  }
  if (!entry) {
    if (rank == 0)
      std::fprintf(stderr, "shardrt: error: shardrt_main was given no entry function\n");
    return 1;
  }

  std::vector<const char *> axisNames;
  for (const std::string &name : manifest.axisNames)
    axisNames.push_back(name.c_str());
  shardrt_init(&argc, &argv, static_cast<int>(manifest.axisSizes.size()), manifest.axisSizes.data(),
               axisNames.data());
  bool opened = false;
  std::FILE *out = openOutput(options, rank, opened);
  if (!opened) {
    shardrt_finalize();
    return 1;
  }

  const Shape &meshSizes = manifest.axisSizes;
  const Shape coords = rankCoords(rank, meshSizes);
  std::vector<Buffer> blocks;
  std::vector<void *> pointers;
  for (const TensorSpec &spec : manifest.args) {
    Shape local = localShape(spec, meshSizes), offset = blockOffset(spec, meshSizes, coords);
    blocks.push_back(allocateBlock(spec, numElements(local)));
    if (spec.role == Role::Param)
      fillParam(spec, local, offset, static_cast<float *>(blocks.back().get()), options.seed);
    else
      fillInput(spec, local, offset, blocks.back().get(), options.seed);
  }
  for (const TensorSpec &spec : manifest.results)
    blocks.push_back(allocateBlock(spec, numElements(localShape(spec, meshSizes))));
  for (const Buffer &block : blocks)
    pointers.push_back(block.get());

  entry(pointers.data());

  std::vector<GatheredResult> gathered;
  for (size_t i = 0; i < manifest.results.size(); ++i)
    gathered.push_back(gatherResult(manifest.results[i], meshSizes,
                                    pointers[manifest.args.size() + i], static_cast<int>(i)));
  int status = 0;
  if (rank == 0) {
    writeResults(out, manifest, options.seed, options.values, gathered);
    bool failed = std::ferror(out) != 0;
    failed = (out == stdout ? std::fflush(out) : std::fclose(out)) != 0 || failed;
    if (failed) {
      std::string target = options.output.empty() ? "stdout" : "'" + options.output + "'";
      std::fprintf(stderr, "shardrt: error: cannot write the results to %s\n", target.c_str());
      status = 1;
    }
  }
  shardrt_finalize();
  return status;
}

} // namespace
} // namespace shardrt

extern "C" int shardrt_main(int argc, char **argv, const char *manifest_json,
                            shardrt_entry_fn entry) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised)
    MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int status = 1;
  try {
    status = shardrt::run(argc, argv, manifest_json, entry, rank);
  } catch (const std::exception &error) {
    // Out of memory, most likely, and maybe on this rank only: end the whole job.
    shardrt::fatal("%s", error.what());
  }
  if (!initialised)
    MPI_Finalize();
  return status;
}
