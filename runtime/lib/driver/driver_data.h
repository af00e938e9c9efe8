// The data of a run as the training loop feeds it: the arrays of the bound inputs
// (driver_bindings.h) loaded once per host, shuffled each epoch, and each rank's rows of
// a batch written into its own blocks, the next batch while the current step runs.
#ifndef SHARDRT_LIB_DRIVER_DATA_H
#define SHARDRT_LIB_DRIVER_DATA_H

#include "driver_bindings.h"
#include "driver_blocks.h"

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace shardrt {

/// The loaded arrays, by BoundInput::arrayKey: element 0 of each. Arrays stored raw in
/// their files are memory-mapped; the others (inflated, decoded) were produced by one
/// rank of each host into shared memory that the host's ranks map. Either way a host
/// holds one copy, in pages the kernel shares, and a rank touches only the rows it
/// reads.
class DataArrays {
public:
  DataArrays() = default;
  DataArrays(const DataArrays &) = delete;
  DataArrays &operator=(const DataArrays &) = delete;
  ~DataArrays();

  const uint8_t *find(const std::string &key) const { return base_.at(key); }

  /// A region this object unmaps when it goes.
  struct Mapping {
    void *address;
    size_t length;
  };

private:
  friend bool loadData(const DataPlan &plan, DataArrays &arrays);
  std::map<std::string, const uint8_t *> base_;
  std::vector<Mapping> mappings_;
};

/// Loads the arrays of both splits and checks their values (labels in [0, classes),
/// integers that fit i32). Collective: returns false on every rank when any rank
/// failed, after the first that did said why.
bool loadData(const DataPlan &plan, DataArrays &arrays);

/// The order of the training examples in epoch `epoch`: a Fisher-Yates shuffle of
/// 0..count-1 drawn from Philox under (seed, epoch), the same on every rank and mesh.
void shuffle(std::vector<int32_t> &order, int64_t count, uint64_t seed, int64_t epoch);

/// Writes this rank's part of a batch into the blocks of the inputs `split` binds: row r
/// of the global batch is example examples[r] of the split for r < real, zeros after.
/// Only the rows of this rank's blocks are touched; `blocks` holds one block per
/// manifest input, in manifest order.
void fillBatch(const std::vector<Block> &blocks, const DataSplit &split, const DataArrays &arrays,
               const int32_t *examples, int64_t real);

/// The training batches, step by step: the batch of step s is the examples
/// [(s - 1) % stepsPerEpoch * batch, ...) of its epoch's order. With prefetch, a thread
/// fills the batch of step s + 1 into blocks of its own while step s runs, and load()
/// copies it in; without, load() fills the inputs itself.
class TrainBatches {
public:
  /// Steps run up to `lastStep`; with `prefetch`, a thread fills the next one's batch.
  TrainBatches(const DataPlan &plan, const DataArrays &arrays, const std::vector<Block> &inputs,
               const Placement &place, uint64_t seed, int64_t stepsPerEpoch, int64_t lastStep,
               bool prefetch);
  ~TrainBatches();

  /// Puts the batch of step `step` into the inputs, then starts on the next (up to
  /// the last step).
  void load(int64_t step);
  /// Seconds load() waited for the prefetch thread, in all.
  double waitedSeconds() const { return waited_; }

private:
  void fill(int64_t step, const std::vector<Block> &blocks);
  void work();

  const DataPlan &plan_;
  const DataArrays &arrays_;
  const std::vector<Block> &inputs_;
  const uint64_t seed_;
  const int64_t stepsPerEpoch_, lastStep_;
  std::vector<int32_t> order_;
  int64_t orderEpoch_ = -1;
  double waited_ = 0;

  // The prefetch thread and the batch it fills.
  std::vector<Block> staged_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int64_t wanted_ = 0, ready_ = 0; // steps; 0: none
  bool stopping_ = false;
};

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_DATA_H
