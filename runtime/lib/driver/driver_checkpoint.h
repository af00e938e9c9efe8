// Checkpoints of a training run: what goes into one (every parameter and optimizer-state
// tensor whole, whatever the mesh, and where the run stands), when the driver writes
// them, and restoring one onto this program's mesh, which may not be the one it was
// written from.
//
// Tensors are named by their parameter path: `params/blocks.W1` (a scanned stack is one
// tensor, its layers together) and `opt_state/mu/blocks.W1`. The header's __metadata__
// holds the position (step, epoch, examples of the epoch consumed), the seed (every
// random number of a run derives from it and the step or epoch: the shuffle, the
// synthetic inputs, dropout), the model and layout fingerprints, the mesh, each tensor's
// layout, and the best-metric record.
#ifndef SHARDRT_LIB_DRIVER_CHECKPOINT_H
#define SHARDRT_LIB_DRIVER_CHECKPOINT_H

#include "driver_blocks.h"
#include "driver_eval.h"
#include "driver_modes.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace shardrt {

/// Where a run stands after `step` (1-based, 0 before the first).
struct RunPosition {
  int64_t step = 0;
  int64_t epoch = 0;           // of that step; 0 without a dataset
  int64_t examplesInEpoch = 0; // of the epoch's order consumed by then
};

/// The best-metric series' record so far.
struct BestRecord {
  bool valid = false;
  double value = 0;
  int64_t step = 0;
};

/// Checks, before anything is allocated, that `--resume` names a checkpoint this
/// program can continue from: the file (or the newest `ckpt-STEP.safetensors` of a
/// folder) reads, its checksums hold, it was written by this model (same tensors,
/// dtypes and shapes, same optimizer) with this batch, and --seed does not say
/// otherwise. Rank 0 reads and says what is wrong; every rank returns its verdict
/// (0, or the exit status). Collective over MPI_COMM_WORLD; the mesh need not be up.
int checkResume(const Manifest &manifest, DriverOptions &options, int rank);

/// For --evaluate (and --generate, from --resume): `path` becomes options.evaluate when
/// it is a file, or else the newest `ckpt-STEP.safetensors` of that folder if its step is
/// above `after`, or empty when the folder has none yet (none at all is an error unless
/// --poll waits for one). The checkpoint is checked as checkResume checks one (for
/// --generate, the model and its tensors only). Rank 0 looks and says what is wrong;
/// every rank returns the verdict (0, or the exit status) and the path. Collective.
int findCheckpointToRead(const Manifest &manifest, const DriverOptions &options, int rank,
                         int64_t after, std::string &path);

/// Writes checkpoints during training as the flags say.
class Checkpointer {
public:
  Checkpointer(const Program &program, int64_t stepsPerEpoch);

  /// Rank 0 creates the folder and takes its lock (an flock on DIR/.lock, which holds
  /// the holder's pid and host; the kernel drops it when the process ends, so a killed
  /// run leaves nothing that blocks): one run per folder. False on every rank (after
  /// rank 0 said why) when it cannot. Collective.
  bool prepare();

  /// Restores `params` and `state` (state kind-major, as the train entry takes it;
  /// empty: the parameters alone) from the checkpoint file `path`, prints the reshard plan on rank
  /// 0 and returns its position: the one to continue after when `resuming`, else the one evaluated.
  /// checkResume (or findCheckpointToRead) has passed; a file that changed since
  /// stops the job. Collective.
  RunPosition restore(const std::string &path, const std::vector<Block> &params,
                      const std::vector<Block> &state, bool resuming);

  /// After each step (and its evaluation, if any): writes `ckpt-STEP` when the interval
  /// has passed or the run ends, and `best-STEP` when `evaluation` improved the best
  /// metric. False on every rank when a write failed (rank 0 said why). Collective.
  bool afterStep(const RunPosition &position, bool lastStep, const std::vector<Block> &params,
                 const std::vector<Block> &state, const Evaluation *evaluation);

  /// Checkpoints written so far, and the seconds they took (gather, write, prune).
  int64_t written() const { return written_; }
  /// The newest `ckpt-STEP` file written (on rank 0), or before the first the one this
  /// run resumed from; empty when there is none.
  const std::string &newest() const { return newest_; }
  double seconds() const { return seconds_; }

  /// One tensor of a checkpoint: a parameter or one kind of its optimizer state, whole
  /// (a scanned stack with all its layers).
  struct Tensor {
    std::string name; // params/blocks.W1, opt_state/mu/blocks.W1
    DType dtype;
    Shape shape;                // the parameter's global shape
    int kind;                   // -1 for the parameter, else the kind of state (adam: 0 mu, 1 nu)
    std::vector<size_t> layers; // its manifest.params entries, one per layer
  };

private:
  bool save(const std::string &prefix, const RunPosition &position,
            const std::vector<Block> &params, const std::vector<Block> &state);

  const Program &program_;
  const int64_t stepsPerEpoch_;
  // What every checkpoint of this program holds and says about its layout.
  const std::vector<Tensor> tensors_;
  const nlohmann::json layouts_; // each tensor's layout, by name
  const std::string layoutFingerprint_, modelFingerprint_;
  double lastSaveSeconds_ = 0;
  int64_t lastSaveStep_ = 0;
  BestRecord best_;
  int64_t written_ = 0;
  double seconds_ = 0;
  std::string newest_;
  int lockFd_ = -1; // rank 0's lock on the folder, held until the process ends
};

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_CHECKPOINT_H
