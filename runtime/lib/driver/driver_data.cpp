// Loading, shuffling and batching Fashion-MNIST.
#include "driver_data.h"
#include "../mesh.h"
#include "../prng.h"
#include "../watchdog.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdio>
#include <numeric>

namespace shardrt {
namespace {

void broadcastBytes(std::vector<uint8_t> &bytes) {
  int64_t size = int64_t(bytes.size());
  watchedWorld("broadcast of the dataset", [&](MPI_Request *request) {
    MPI_Ibcast(&size, 1, MPI_INT64_T, 0, MPI_COMM_WORLD, request);
  });
  bytes.resize(size_t(size));
  for (int64_t at = 0; at < size; at += INT_MAX) // MPI counts are ints
    watchedWorld("broadcast of the dataset", [&](MPI_Request *request) {
      MPI_Ibcast(bytes.data() + at, static_cast<int>(std::min<int64_t>(size - at, INT_MAX)),
                 MPI_BYTE, 0, MPI_COMM_WORLD, request);
    });
}

void broadcast(Dataset &set) {
  watchedWorld("broadcast of the dataset", [&](MPI_Request *request) {
    MPI_Ibcast(&set.count, 1, MPI_INT64_T, 0, MPI_COMM_WORLD, request);
  });
  broadcastBytes(set.pixels);
  broadcastBytes(set.labels);
}

/// pixel / 255 in f32, for each byte.
const std::array<float, 256> kPixelValues = [] {
  std::array<float, 256> values;
  for (int p = 0; p < 256; ++p)
    values[p] = float(p) / 255.0f;
  return values;
}();

} // namespace

bool loadDataset(const std::string &folder, int rank, FashionMnist &dataset) {
  bool ok = true;
  if (rank == 0) {
    try {
      dataset = readFashionMnist(folder);
    } catch (const DatasetError &error) {
      std::fprintf(stderr, "shardrt: error: Fashion-MNIST: %s\n", error.what());
      ok = false;
    }
  }
  if (!rank0Verdict(ok))
    return false;
  broadcast(dataset.train);
  broadcast(dataset.test);
  return true;
}

void shuffle(std::vector<int32_t> &order, int64_t count, uint64_t seed, int64_t epoch) {
  order.resize(size_t(count));
  std::iota(order.begin(), order.end(), 0);
  const uint64_t key = fnv1a64("shuffle");
  for (int64_t i = count - 1; i > 0; --i) {
    // j uniform in [0, i]: the high word of 64 random bits times i + 1.
    PhiloxCounter draw = philoxBlock(seed, key, uint64_t(epoch) << 32 | uint64_t(i));
    uint64_t bits = uint64_t(draw[1]) << 32 | draw[0];
    int64_t j = int64_t((unsigned __int128)bits * uint64_t(i + 1) >> 64);
    std::swap(order[size_t(i)], order[size_t(j)]);
  }
}

void fillBatch(const std::vector<Block> &inputs, const Dataset &set, const int32_t *examples,
               int64_t real) {
  for (const Block &block : inputs) {
    const TensorSpec &spec = *block.spec;
    if (spec.data == DataField::None)
      continue;
    // A run may span several examples (an unsplit image block is one run): cut it at
    // example boundaries.
    const int64_t exampleSize = numElements(spec.shape) / spec.shape[0];
    forEachRow(spec.shape, block.local, block.offset,
               [&](int64_t localStart, int64_t globalStart, int64_t length) {
                 for (int64_t done = 0; done < length;) {
                   const int64_t at = globalStart + done, row = at / exampleSize;
                   const int64_t within = at % exampleSize;
                   const int64_t n = std::min(length - done, exampleSize - within);
                   const bool isReal = row < real;
                   const int64_t example = isReal ? examples[row] : 0;
                   if (spec.data == DataField::Image) {
                     float *out = block.floats() + localStart + done;
                     const uint8_t *pixels = set.pixels.data() + example * kImagePixels + within;
                     for (int64_t j = 0; j < n; ++j)
                       out[j] = isReal ? kPixelValues[pixels[j]] : 0.0f;
                   } else {
                     static_cast<int32_t *>(block.data())[localStart + done] =
                         isReal ? set.labels[size_t(example)] : 0;
                   }
                   done += n;
                 }
               });
  }
}

} // namespace shardrt
