// Fashion-MNIST as the training loop feeds it: read once by rank 0 and broadcast,
// shuffled each epoch, and each rank's rows of a batch written into its own blocks.
#ifndef SHARDRT_LIB_DRIVER_DATA_H
#define SHARDRT_LIB_DRIVER_DATA_H

#include "dataset.h"
#include "driver_blocks.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardrt {

/// Rank 0 reads the dataset in `folder` and broadcasts it: one reader, and a verdict
/// that every rank shares. Returns false on every rank when rank 0 could not read it
/// (after saying why).
bool loadDataset(const std::string &folder, int rank, FashionMnist &dataset);

/// The order of the training examples in epoch `epoch`: a Fisher-Yates shuffle of
/// 0..count-1 drawn from Philox under (seed, epoch), the same on every rank and mesh.
void shuffle(std::vector<int32_t> &order, int64_t count, uint64_t seed, int64_t epoch);

/// Writes this rank's part of a batch into the blocks of the inputs that read the
/// dataset: row r of the global batch is example examples[r] of `set` for r < real,
/// padding (a black image, label 0) after. Only the rows of this rank's blocks are
/// touched.
void fillBatch(const std::vector<Block> &inputs, const Dataset &set, const int32_t *examples,
               int64_t real);

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_DATA_H
