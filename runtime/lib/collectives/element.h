// Element types and reductions shared by the collectives.
#ifndef SHARDRT_LIB_ELEMENT_H
#define SHARDRT_LIB_ELEMENT_H

#include "shardrt/shardrt.h"

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

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

/// `x` as bfloat16 (its upper 16 bits), to nearest with ties to even; infinities
/// stay infinite and a NaN stays a NaN (the step's finiteness check reads them).
inline uint16_t toBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

inline float fromBf16(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

} // namespace shardrt

#endif // SHARDRT_LIB_ELEMENT_H
