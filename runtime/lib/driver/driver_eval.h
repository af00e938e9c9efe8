// Evaluation: the eval entry over the whole test set, and the per-example results
// averaged over the real examples of the mesh.
#ifndef SHARDRT_LIB_DRIVER_EVAL_H
#define SHARDRT_LIB_DRIVER_EVAL_H

#include "driver_data.h"
#include "driver_modes.h"

#include <string>
#include <utility>
#include <vector>

namespace shardrt {

/// The sum, in double, of the rows below `real` of a per-example result that this rank
/// holds as first copies (0 on a rank with replicas only): summed over the ranks, each
/// row counts once.
double sumRealRows(const Block &result, const Shape &coords, int64_t real);

struct Evaluation {
  int64_t examples = 0;
  std::vector<std::pair<std::string, double>> means; // per-example results, manifest order
};

/// Runs the eval entry (`buffers`: the current parameters, `inputs`, `results`) on the
/// eval split in order, in batches of the run's batch; the last one is padded, and the
/// padding is left out of the means. Synthetic inputs get their fills under the run's
/// seed. Collective: every rank calls it.
Evaluation evaluate(const Program &program, void **buffers, const std::vector<Block> &inputs,
                    const std::vector<Block> &results, const DataArrays &arrays);

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_EVAL_H
