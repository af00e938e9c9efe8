// Evaluating on the eval split.
//
// The means are sums in double over the real examples, one partial sum per rank (its
// first copies of the per-example rows), added over the mesh once per evaluation, and
// divided by the number of eval examples: the padding of the last batch, which the
// entry sees as examples, never reaches them.
#include "driver_eval.h"
#include "collectives/watchdog.h"
#include "driver_data.h"

#include <mpi.h>

#include <algorithm>
#include <numeric>

namespace shardrt {

double sumRealRows(const Block &result, const Shape &coords, int64_t real) {
  if (!holdsFirstCopy(*result.spec, coords))
    return 0;
  double sum = 0;
  const int64_t first = result.offset[0], rows = std::min(result.local[0], real - first);
  for (int64_t i = 0; i < rows; ++i)
    sum += result.floats()[i];
  return sum;
}

Evaluation evaluate(const Program &program, void **buffers, const std::vector<Block> &inputs,
                    const std::vector<Block> &results, const DataArrays &arrays) {
  const DataSplit &split = program.data.eval;
  const int64_t batch = program.data.batch, count = split.examples;
  std::vector<int32_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  fillInputs(inputs, program.options.seed, program.data.synthetic);
  std::vector<double> sums(results.size(), 0.0);
  for (int64_t first = 0; first < count; first += batch) {
    const int64_t real = std::min(batch, count - first);
    fillBatch(inputs, split, arrays, order.data() + first, real);
    program.eval(buffers);
    for (size_t i = 0; i < results.size(); ++i)
      if (results[i].spec->perExample)
        sums[i] += sumRealRows(results[i], program.place.coords, real);
  }
  watchedWorld("all_reduce of the evaluation's sums", [&](MPI_Request *request) {
    MPI_Iallreduce(MPI_IN_PLACE, sums.data(), static_cast<int>(sums.size()), MPI_DOUBLE, MPI_SUM,
                   MPI_COMM_WORLD, request);
  });
  Evaluation evaluation;
  evaluation.examples = count;
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].spec->perExample)
      evaluation.means.emplace_back(results[i].spec->name, sums[i] / double(count));
  return evaluation;
}

} // namespace shardrt
