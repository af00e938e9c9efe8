// The strided copy of generated code. finalize-memref-to-llvm lowers a memref.copy
// whose views are not both contiguous (a pad's interior, an all_slice's block) to a
// call of memrefCopy, which MLIR ships in libmlir_c_runner_utils. That library links
// libMLIR and libLLVM: every program would map them (hundreds of MiB of address
// space, the load time of each start) for one function, which also copies element by
// element. This one has the same contract and copies each innermost run that is
// contiguous on both sides with one memcpy.
#include "shardrt/shardrt.h"

#include <cstring>
#include <vector>

namespace {

/// MLIR's descriptor of a ranked memref of bytes: allocated and aligned pointers,
/// offset, then `rank` sizes and `rank` strides (in elements).
struct Descriptor {
  char *allocated;
  char *aligned;
  int64_t offset;
  int64_t sizesAndStrides[];
};

} // namespace

void memrefCopy(int64_t elementBytes, shardrt_unranked_memref *source,
                shardrt_unranked_memref *target) {
  const int64_t rank = source->rank;
  const auto *from = static_cast<const Descriptor *>(source->descriptor);
  const auto *to = static_cast<const Descriptor *>(target->descriptor);
  const int64_t *sizes = from->sizesAndStrides;
  const int64_t *fromStrides = sizes + rank;
  const int64_t *toStrides = to->sizesAndStrides + rank;
  for (int64_t axis = 0; axis < rank; ++axis)
    if (sizes[axis] == 0)
      return;
  const char *read = from->aligned + from->offset * elementBytes;
  char *write = to->aligned + to->offset * elementBytes;
  // The innermost axes that are contiguous in both views form one run.
  int64_t runBytes = elementBytes, outer = rank;
  while (outer > 0 && fromStrides[outer - 1] * elementBytes == runBytes &&
         toStrides[outer - 1] * elementBytes == runBytes)
    runBytes *= sizes[--outer];
  if (outer == 0) {
    std::memcpy(write, read, size_t(runBytes));
    return;
  }
  // An odometer over the axes outside the run.
  std::vector<int64_t> index(size_t(outer), 0);
  for (;;) {
    std::memcpy(write, read, size_t(runBytes));
    int64_t axis = outer - 1;
    for (; axis >= 0; --axis) {
      read += fromStrides[axis] * elementBytes;
      write += toStrides[axis] * elementBytes;
      if (++index[axis] < sizes[axis])
        break;
      read -= sizes[axis] * fromStrides[axis] * elementBytes;
      write -= sizes[axis] * toStrides[axis] * elementBytes;
      index[axis] = 0;
    }
    if (axis < 0)
      return;
  }
}
