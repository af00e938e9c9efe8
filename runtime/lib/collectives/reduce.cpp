// Element-wise reductions for the ring collectives, one loop per (type, op) so that
// the compiler vectorises each.
#include "element.h"
#include "mesh/mesh.h"

#include <algorithm>
#include <climits>
#include <type_traits>

namespace shardrt {

namespace {

template <typename T, typename Op>
void apply(std::byte *dst, const std::byte *a, const std::byte *b, int64_t n, Op op) {
  T *d = reinterpret_cast<T *>(dst);
  const T *x = reinterpret_cast<const T *>(a);
  const T *y = reinterpret_cast<const T *>(b);
  for (int64_t i = 0; i < n; ++i)
    d[i] = op(x[i], y[i]);
}

template <typename T>
void combineAs(shardrt_reduction op, std::byte *dst, const std::byte *a, const std::byte *b,
               int64_t n) {
  // Signed overflow is undefined in C++; integers add and multiply as unsigned (wrap).
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, int32_t>);
  using Wide = std::conditional_t<std::is_integral_v<T>, uint32_t, T>;
  switch (op) {
  case SHARDRT_SUM:
    return apply<T>(dst, a, b, n, [](T x, T y) { return T(Wide(x) + Wide(y)); });
  case SHARDRT_PRODUCT:
    return apply<T>(dst, a, b, n, [](T x, T y) { return T(Wide(x) * Wide(y)); });
  case SHARDRT_MAX:
    return apply<T>(dst, a, b, n, [](T x, T y) { return std::max(x, y); });
  case SHARDRT_MIN:
    return apply<T>(dst, a, b, n, [](T x, T y) { return std::min(x, y); });
  }
  fatal("unknown reduction %d", static_cast<int>(op));
}

} // namespace

ElementType elementType(Scalar scalar) {
  if (scalar == Scalar::F32)
    return {scalar, MPI_FLOAT, sizeof(float)};
  return {scalar, MPI_INT32_T, sizeof(int32_t)};
}

MPI_Op mpiOp(shardrt_reduction op, const char *caller) {
  switch (op) {
  case SHARDRT_SUM:
    return MPI_SUM;
  case SHARDRT_MAX:
    return MPI_MAX;
  case SHARDRT_MIN:
    return MPI_MIN;
  case SHARDRT_PRODUCT:
    return MPI_PROD;
  }
  fatal("%s: unknown reduction %d", caller, static_cast<int>(op));
}

void combine(ElementType type, shardrt_reduction op, std::byte *dst, const std::byte *a,
             const std::byte *b, int64_t n) {
  if (type.scalar == Scalar::F32)
    combineAs<float>(op, dst, a, b, n);
  else
    combineAs<int32_t>(op, dst, a, b, n);
}

int mpiCount(int64_t count, const char *caller) {
  if (count < 0 || count > INT_MAX)
    fatal("%s: %lld elements do not fit one MPI message (at most %d)", caller,
          static_cast<long long>(count), INT_MAX);
  return static_cast<int>(count);
}

} // namespace shardrt
