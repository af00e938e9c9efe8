// The allocation functions of generated code. shardc lowers memref.alloc with
// finalize-memref-to-llvm{use-generic-functions}, which calls these instead of
// malloc: a null pointer from malloc would reach the step's loops and end the rank
// with a segmentation fault; here the job stops with a message instead. And the
// arena in which a step places its temporaries, which the runtime keeps from step to
// step.
#include "mesh/mesh.h"
#include "scratch.h"

#include "shardrt/shardrt.h"

#include <cstddef>
#include <cstdlib>

namespace {

void *checked(void *pointer, size_t bytes) {
  if (!pointer && bytes)
    shardrt::fatal("out of memory: a train or eval step asked for %zu bytes more and the "
                   "host has none left for this rank (shardc's --report shows what a rank "
                   "holds; a smaller batch or more ranks need less)",
                   bytes);
  return pointer;
}

} // namespace

void *_mlir_memref_to_llvm_alloc(size_t bytes) { return checked(std::malloc(bytes), bytes); }

void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t bytes) {
  // aligned_alloc wants a size that is a multiple of the alignment.
  const size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  return checked(std::aligned_alloc(alignment, rounded), bytes);
}

void _mlir_memref_to_llvm_free(void *pointer) { std::free(pointer); }

void *shardrt_step_arena(int64_t bytes) {
  if (bytes < 0)
    shardrt::fatal("shardrt_step_arena: a step asked for %lld bytes",
                   static_cast<long long>(bytes));
  // The steps ask for two or three sizes: the mapping is the largest in whole huge
  // pages, as shardc --report counts it, not twice a smaller one.
  static shardrt::ScratchBuffer arena(/*doubles=*/false);
  return checked(arena.tryReserve(size_t(bytes)), size_t(bytes));
}
