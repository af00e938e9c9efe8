// Element types and reductions shared by the collectives.
#ifndef SHARDRT_LIB_ELEMENT_H
#define SHARDRT_LIB_ELEMENT_H

#include "shardrt/shardrt.h"

#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace shardrt {

enum class Scalar { F32, I32 };

struct ElementType {
  Scalar scalar;
  MPI_Datatype mpi;
  size_t bytes;
};

ElementType elementType(Scalar scalar);

/// The MPI_Op of a reduction; stops on a value outside the enum.
MPI_Op mpiOp(shardrt_reduction op, const char *caller);

/// dst[i] = a[i] (op) b[i] for n elements; dst may be a or b. Integer sums and products
/// wrap, as MPI's do.
void combine(ElementType type, shardrt_reduction op, std::byte *dst, const std::byte *a,
             const std::byte *b, int64_t n);

/// An element count as the int that MPI takes; stops when it does not fit.
int mpiCount(int64_t count, const char *caller);

} // namespace shardrt

#endif // SHARDRT_LIB_ELEMENT_H
