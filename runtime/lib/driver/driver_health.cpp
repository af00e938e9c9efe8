// Training health (driver_health.h).
//
// The check reads every element a rank holds of the new parameters and state once per
// step: a pass over memory the step has just written, much cheaper than the step.
// Finding the culprit costs a grad run, and only happens when the run stops.
#include "driver_health.h"
#include "collectives/watchdog.h"
#include "driver_stop.h"

#include <mpi.h>

#include <climits>
#include <cmath>
#include <cstdint>

namespace shardrt {
namespace {

/// Whether every f32 of the block is finite: no exponent of all ones; and the sum of
/// its bits (driver_abandon.h's digest). Branch-free, so that the loop vectorizes.
bool finite(const Block &block, uint64_t &sum) {
  const uint32_t *bits = static_cast<const uint32_t *>(block.data());
  const int64_t count = block.count();
  uint32_t nonFinite = 0;
  uint64_t total = 0;
  for (int64_t i = 0; i < count; ++i) {
    nonFinite |= uint32_t((bits[i] & 0x7f800000u) == 0x7f800000u);
    total += bits[i];
  }
  sum = total;
  return !nonFinite;
}

bool finite(const Block &block) {
  uint64_t sum = 0;
  return finite(block, sum);
}

std::string nameOf(const TensorSpec &spec) {
  return spec.layer < 0 ? spec.name : spec.name + " [layer " + std::to_string(spec.layer) + "]";
}

} // namespace

int stepHealth(float loss, const std::vector<Block> &params, const std::vector<Block> &state,
               int &stopSignal, uint64_t &digest) {
  int verdict[2] = {std::isfinite(loss) ? kFinite : kLossNonFinite, stopBits()};
  // digestOf's sum, from the same pass.
  uint64_t position = 1;
  digest = 0;
  for (const std::vector<Block> *blocks : {&params, &state})
    for (const Block &block : *blocks) {
      uint64_t sum = 0;
      if (!finite(block, sum))
        verdict[0] |= kStateNonFinite;
      digest += sum * position;
      position += 2;
    }
  watchedWorld("all_reduce of the step's health", [&](MPI_Request *request) {
    MPI_Iallreduce(MPI_IN_PLACE, verdict, 2, MPI_INT, MPI_BOR, MPI_COMM_WORLD, request);
  });
  stopSignal = stopSignalOf(verdict[1]);
  return verdict[0];
}

std::string firstNonFiniteBlock(const std::vector<Block> &blocks) {
  int first = INT_MAX;
  for (size_t i = 0; i < blocks.size() && first == INT_MAX; ++i)
    if (!finite(blocks[i]))
      first = int(i);
  watchedWorld("all_reduce of the first non-finite tensor", [&](MPI_Request *request) {
    MPI_Iallreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, request);
  });
  return first == INT_MAX ? std::string() : nameOf(*blocks[first].spec);
}

GradientVerdict checkGradients(const Program &program, const std::vector<Block> &params,
                               const std::vector<Block> &inputs) {
  std::vector<Block> loss, grads = allocateBlocks(program.manifest.params, program.place);
  loss.push_back(allocateBlock(lossSpec(), program.place));
  program.grad(pointersOf({&params, &inputs, &loss, &grads}).data());
  GradientVerdict verdict;
  verdict.lossFinite = finite(loss[0]);
  verdict.firstNonFinite = firstNonFiniteBlock(grads);
  return verdict;
}

} // namespace shardrt
