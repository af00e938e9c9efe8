// This rank's blocks of a program's tensors: allocated once, before the run, and
// filled by global element index, so that every mesh starts from the same numbers.
#ifndef SHARDRT_LIB_DRIVER_BLOCKS_H
#define SHARDRT_LIB_DRIVER_BLOCKS_H

#include "driver_layout.h"
#include "driver_manifest.h"

#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <vector>

namespace shardrt {

/// Where this rank sits in the mesh.
struct Placement {
  Shape meshSizes, coords;
};

struct FreeDeleter {
  void operator()(void *pointer) const { std::free(pointer); }
};

/// This rank's block of one tensor: where it lies in the whole tensor, and its memory,
/// dense and row-major, aligned to 64 bytes, zeroed.
struct Block {
  const TensorSpec *spec = nullptr;
  Shape local, offset;
  std::unique_ptr<void, FreeDeleter> memory;

  void *data() const { return memory.get(); }
  float *floats() const { return static_cast<float *>(memory.get()); }
  int64_t count() const { return numElements(local); }
};

/// Where a block lies in the whole tensor its numbers belong to: its own tensor, or for
/// one layer the stack, of which it is the block [1, local...] at [layer, offset...].
/// Fills draw, and checkpoints store, by index in that tensor.
struct DrawnRegion {
  Shape global, local, offset;
};
DrawnRegion drawnRegion(const Block &block);

/// Copies this rank's part of `whole`, the tensor of drawnRegion's global shape
/// (4-byte elements, row-major), into `block`.
void copyFromWhole(const Block &block, const void *whole);

/// Stops the job (MPI_Abort) when the memory cannot be had: maybe on this rank only.
Block allocateBlock(const TensorSpec &spec, const Placement &place);
std::vector<Block> allocateBlocks(const std::vector<TensorSpec> &specs, const Placement &place);

/// The grad entry's `loss` result: an f32 scalar.
const TensorSpec &lossSpec();

/// An entry's buffers: the blocks of each group, in order.
std::vector<void *> pointersOf(std::initializer_list<const std::vector<Block> *> groups);

/// Parameters from their initialisers under the path `name`; one layer of a stack is
/// the block [layer, offset...] of the stack and takes its fans from one layer's shape.
void fillParams(const std::vector<Block> &params, uint64_t seed);

/// Inputs from their fills under the path "inputs.NAME": N(0, 1), the uniform draw u,
/// or floor(u * high); one layer of a stack is the block [layer, offset...] of the
/// stack. Every input, or those of `which` (manifest indices).
void fillInputs(const std::vector<Block> &inputs, uint64_t seed);
void fillInputs(const std::vector<Block> &inputs, uint64_t seed, const std::vector<size_t> &which);

/// The fill seed of a training step's synthetic inputs: a Philox draw of (seed, step),
/// so that each step gets new numbers, the same on every mesh.
uint64_t stepSeed(uint64_t seed, int64_t step);

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_BLOCKS_H
