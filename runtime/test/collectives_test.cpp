// shardrt-test-collectives SIZE...: every collective on every subset of the mesh's
// axes, checked element by element.
//
// Run under `mpirun -np <product of the sizes>`. Rank r fills its input with
// value(r, i), a formula of its rank and the element's linear index, so the expected
// output can be computed here without communication: the test finds each group's
// members and their order itself (by enumerating the mesh and sorting coordinate
// tuples), not through the runtime's index arithmetic. All values are small integers,
// exact in f32 whatever the reduction order. Prints `collectives: N checks passed` on
// rank 0; exits non-zero on any mismatch, on any rank.
#include "shardrt/shardrt.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using Shape = std::vector<int64_t>;
using Index = std::vector<int64_t>;

std::vector<int64_t> meshSizes;
int myRank = 0;
int64_t checks = 0, failures = 0;

/// The coordinates of every rank, in rank order: the row-major enumeration of the mesh
/// (last axis fastest), made by counting like an odometer.
std::vector<Index> allCoordinates() {
  std::vector<Index> result;
  Index coord(meshSizes.size(), 0);
  for (;;) {
    result.push_back(coord);
    int a = static_cast<int>(meshSizes.size()) - 1;
    while (a >= 0 && ++coord[a] == meshSizes[a])
      coord[a--] = 0;
    if (a < 0)
      return result;
  }
}

/// The ranks of my group over `mask`, ordered by their coordinates on the mask's axes.
std::vector<int> groupMembers(uint32_t mask) {
  std::vector<Index> coords = allCoordinates();
  auto onAxes = [&](int rank, bool inMask) {
    Index picked;
    for (size_t a = 0; a < meshSizes.size(); ++a)
      if (((mask >> a) & 1u) == static_cast<uint32_t>(inMask))
        picked.push_back(coords[rank][a]);
    return picked;
  };
  std::vector<int> members;
  for (int r = 0; r < static_cast<int>(coords.size()); ++r)
    if (onAxes(r, false) == onAxes(myRank, false))
      members.push_back(r);
  std::sort(members.begin(), members.end(),
            [&](int a, int b) { return onAxes(a, true) < onAxes(b, true); });
  return members;
}

int64_t elements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

Index unravel(int64_t linear, const Shape &shape) {
  Index index(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    index[d] = linear % shape[d];
    linear /= shape[d];
  }
  return index;
}

int64_t ravel(const Index &index, const Shape &shape) {
  int64_t linear = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    linear = linear * shape[d] + index[d];
  return linear;
}

/// The value rank `rank` puts at linear index `i`: products need small factors to stay
/// exact; the others distinguish every (rank, index).
int64_t value(int rank, int64_t i, shardrt_reduction op) {
  if (op == SHARDRT_PRODUCT)
    return 1 + (rank * 7 + i) % 3;
  return rank * 4096 + i;
}

int64_t reduce(shardrt_reduction op, int64_t a, int64_t b) {
  switch (op) {
  case SHARDRT_SUM:
    return a + b;
  case SHARDRT_MAX:
    return std::max(a, b);
  case SHARDRT_MIN:
    return std::min(a, b);
  case SHARDRT_PRODUCT:
    return a * b;
  }
  return 0;
}

const char *opName(shardrt_reduction op) {
  const char *names[] = {"sum", "max", "min", "product"};
  return names[op];
}

std::string describe(const Shape &shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? "x" : "") + std::to_string(shape[d]);
  return text + "]";
}

/// Compares `got` with expected(i) for every i.
template <typename T>
void expectAll(const std::string &what, const std::vector<T> &got,
               const std::function<int64_t(int64_t)> &expected) {
  for (int64_t i = 0; i < static_cast<int64_t>(got.size()); ++i) {
    ++checks;
    int64_t want = expected(i);
    if (got[i] != static_cast<T>(want)) {
      if (++failures <= 10)
        std::fprintf(stderr, "rank %d: %s: element %lld is %g, expected %lld\n", myRank,
                     what.c_str(), static_cast<long long>(i), static_cast<double>(got[i]),
                     static_cast<long long>(want));
    }
  }
}

void expectEqual(const std::string &what, int64_t got, int64_t want) {
  ++checks;
  if (got != want && ++failures <= 10)
    std::fprintf(stderr, "rank %d: %s is %lld, expected %lld\n", myRank, what.c_str(),
                 static_cast<long long>(got), static_cast<long long>(want));
}

template <typename T> std::vector<T> filled(int64_t n, shardrt_reduction op = SHARDRT_SUM) {
  std::vector<T> data(n);
  for (int64_t i = 0; i < n; ++i)
    data[i] = static_cast<T>(value(myRank, i, op));
  return data;
}

// The runtime's typed entry points, chosen by element type.
void allReduce(uint32_t m, const float *in, float *out, int64_t n, shardrt_reduction op) {
  shardrt_all_reduce_f32(m, in, out, n, op);
}
void allReduce(uint32_t m, const int32_t *in, int32_t *out, int64_t n, shardrt_reduction op) {
  shardrt_all_reduce_i32(m, in, out, n, op);
}
void allGather(uint32_t m, const float *in, float *out, const Shape &s, int d) {
  shardrt_all_gather_f32(m, in, out, static_cast<int>(s.size()), s.data(), d);
}
void allGather(uint32_t m, const int32_t *in, int32_t *out, const Shape &s, int d) {
  shardrt_all_gather_i32(m, in, out, static_cast<int>(s.size()), s.data(), d);
}
void reduceScatter(uint32_t m, const float *in, float *out, const Shape &s, int d,
                   shardrt_reduction op) {
  shardrt_reduce_scatter_f32(m, in, out, static_cast<int>(s.size()), s.data(), d, op);
}
void reduceScatter(uint32_t m, const int32_t *in, int32_t *out, const Shape &s, int d,
                   shardrt_reduction op) {
  shardrt_reduce_scatter_i32(m, in, out, static_cast<int>(s.size()), s.data(), d, op);
}
void allToAll(uint32_t m, const float *in, float *out, const Shape &s, int split, int concat) {
  shardrt_all_to_all_f32(m, in, out, static_cast<int>(s.size()), s.data(), split, concat);
}
void allToAll(uint32_t m, const int32_t *in, int32_t *out, const Shape &s, int split, int concat) {
  shardrt_all_to_all_i32(m, in, out, static_cast<int>(s.size()), s.data(), split, concat);
}

const shardrt_reduction kOps[] = {SHARDRT_SUM, SHARDRT_MAX, SHARDRT_MIN, SHARDRT_PRODUCT};
// Local shapes: a 3-d one (every dimension split or joined in turn, the middle and
// innermost ones needing the block transposes) and a 1-d one.
const Shape kShapes[] = {{2, 3, 4}, {5}};

template <typename T>
void checkAllReduce(const char *type, uint32_t mask, const std::vector<int> &members) {
  // 37: no group size divides it, so the ring's blocks are uneven; 3: fewer elements
  // than ranks, so some blocks are empty.
  for (int64_t count : {37, 3})
    for (shardrt_reduction op : kOps) {
      auto expected = [&](int64_t i) {
        int64_t acc = value(members[0], i, op);
        for (size_t m = 1; m < members.size(); ++m)
          acc = reduce(op, acc, value(members[m], i, op));
        return acc;
      };
      std::string what = std::string("all_reduce ") + opName(op) + " " + type + " " +
                         std::to_string(count) + " elements, axes 0x" + std::to_string(mask);
      std::vector<T> in = filled<T>(count, op), out(count);
      allReduce(mask, in.data(), out.data(), count, op);
      expectAll(what, out, expected);
      expectAll(what + " (input kept)", in, [&](int64_t i) { return value(myRank, i, op); });
      allReduce(mask, in.data(), in.data(), count, op);
      expectAll(what + " in place", in, expected);
    }
}

/// With values whose sum depends on the order of additions, every member of a group
/// must still hold bitwise the same all_reduce result (replicated parameters would drift
/// apart otherwise), close to the exact sum.
void checkReplicasAgree(uint32_t mask, const std::vector<int> &members) {
  const int64_t count = 1000;
  auto valueAt = [](int rank, int64_t i) { return std::sin(rank * 1.7 + i * 0.37) * 1e3; };
  std::vector<float> in(count), out(count);
  for (int64_t i = 0; i < count; ++i)
    in[i] = static_cast<float>(valueAt(myRank, i));
  allReduce(mask, in.data(), out.data(), count, SHARDRT_SUM);
  std::vector<float> everyone(count * shardrt_num_ranks());
  MPI_Allgather(out.data(), count, MPI_FLOAT, everyone.data(), count, MPI_FLOAT, MPI_COMM_WORLD);
  for (int member : members) {
    ++checks;
    if (std::memcmp(&everyone[member * count], out.data(), count * sizeof(float)) != 0 &&
        ++failures <= 10)
      std::fprintf(stderr, "rank %d: all_reduce over 0x%x differs from rank %d's\n", myRank, mask,
                   member);
  }
  for (int64_t i = 0; i < count; ++i) {
    double exact = 0, magnitude = 0;
    for (int member : members) {
      exact += static_cast<float>(valueAt(member, i));
      magnitude += std::fabs(valueAt(member, i));
    }
    ++checks;
    if (std::fabs(out[i] - exact) > 1e-6 * magnitude && ++failures <= 10)
      std::fprintf(stderr,
                   "rank %d: inexact all_reduce over 0x%x: element %lld is %.9g, "
                   "expected %.9g\n",
                   myRank, mask, static_cast<long long>(i), out[i], exact);
  }
}

template <typename T>
void checkAllGather(const char *type, uint32_t mask, const std::vector<int> &members) {
  const int64_t groupSize = members.size();
  for (const Shape &local : kShapes)
    for (int d = 0; d < static_cast<int>(local.size()); ++d) {
      Shape outShape = local;
      outShape[d] *= groupSize;
      std::vector<T> in = filled<T>(elements(local)), out(elements(outShape));
      allGather(mask, in.data(), out.data(), local, d);
      expectAll(std::string("all_gather ") + type + " " + describe(local) + " dim " +
                    std::to_string(d) + " axes 0x" + std::to_string(mask),
                out, [&](int64_t i) {
                  Index q = unravel(i, outShape);
                  int64_t from = q[d] / local[d];
                  q[d] %= local[d];
                  return value(members[from], ravel(q, local), SHARDRT_SUM);
                });
    }
}

template <typename T>
void checkReduceScatter(const char *type, uint32_t mask, const std::vector<int> &members,
                        int64_t myIndex) {
  const int64_t groupSize = members.size();
  for (shardrt_reduction op : kOps)
    for (const Shape &block : kShapes)
      for (int d = 0; d < static_cast<int>(block.size()); ++d) {
        Shape inShape = block;
        inShape[d] *= groupSize;
        std::vector<T> in = filled<T>(elements(inShape), op), out(elements(block));
        reduceScatter(mask, in.data(), out.data(), inShape, d, op);
        expectAll(std::string("reduce_scatter ") + opName(op) + " " + type + " " +
                      describe(inShape) + " dim " + std::to_string(d) + " axes 0x" +
                      std::to_string(mask),
                  out, [&](int64_t i) {
                    Index p = unravel(i, block);
                    p[d] += myIndex * block[d];
                    int64_t at = ravel(p, inShape);
                    int64_t acc = value(members[0], at, op);
                    for (size_t m = 1; m < members.size(); ++m)
                      acc = reduce(op, acc, value(members[m], at, op));
                    return acc;
                  });
      }
}

template <typename T>
void checkAllToAll(const char *type, uint32_t mask, const std::vector<int> &members,
                   int64_t myIndex) {
  const int64_t groupSize = members.size();
  for (const Shape &base : kShapes)
    for (int split = 0; split < static_cast<int>(base.size()); ++split)
      for (int concat = 0; concat < static_cast<int>(base.size()); ++concat) {
        Shape inShape = base, chunk = base, outShape = base;
        inShape[split] *= groupSize; // so that the group size divides the split dim
        outShape[concat] *= groupSize;
        std::vector<T> in = filled<T>(elements(inShape)), out(elements(outShape));
        allToAll(mask, in.data(), out.data(), inShape, split, concat);
        expectAll(std::string("all_to_all ") + type + " " + describe(inShape) + " split " +
                      std::to_string(split) + " concat " + std::to_string(concat) + " axes 0x" +
                      std::to_string(mask),
                  out, [&](int64_t i) {
                    // Block `from` of the output came from member `from`: its block
                    // number myIndex along the split dimension.
                    Index q = unravel(i, outShape);
                    int64_t from = q[concat] / chunk[concat];
                    q[concat] %= chunk[concat];
                    q[split] += myIndex * chunk[split];
                    return value(members[from], ravel(q, inShape), SHARDRT_SUM);
                  });
      }
}

/// Element i of this rank's block (group index `myIndex`) of a sum over `members`,
/// scattered along dimension d: `terms(member, j)` is element j of a member's input of
/// shape `inShape`, the block has shape `block`.
int64_t scatteredSum(const std::function<int64_t(int, int64_t)> &terms,
                     const std::vector<int> &members, const Shape &block, const Shape &inShape,
                     int d, int64_t myIndex, int64_t i) {
  Index p = unravel(i, block);
  p[d] += myIndex * block[d];
  int64_t sum = 0;
  for (int member : members)
    sum += terms(member, ravel(p, inShape));
  return sum;
}

/// For each shape of kShapes as a reduce-scatter's output (`block`) and each of its
/// dimensions d: the input's shape (dimension d times `groupSize`), the input filled
/// with terms(myRank, element) and an output buffer, for `check(block, inShape, d, x, y)`.
template <typename Check>
void forEachScatter(size_t groupSize, const std::function<int64_t(int, int64_t)> &terms,
                    Check check) {
  for (const Shape &block : kShapes)
    for (int d = 0; d < static_cast<int>(block.size()); ++d) {
      Shape inShape = block;
      inShape[d] *= static_cast<int64_t>(groupSize);
      std::vector<float> x(elements(inShape)), y(elements(block));
      for (int64_t i = 0; i < elements(inShape); ++i)
        x[i] = static_cast<float>(terms(myRank, i));
      check(block, inShape, d, x, y);
    }
}

/// The gradients' entry points: in f32 (the default) bitwise the plain ones; with
/// --reduce-precision bf16, exact on values and sums that bfloat16 holds exactly (small
/// integers; counts and shapes that pad and split unevenly), bitwise the same on every
/// member, and within bfloat16's rounding of the exact sum elsewhere.
void checkGradientSyncs(uint32_t mask, const std::vector<int> &members, int64_t myIndex) {
  const std::string axes = " axes 0x" + std::to_string(mask);
  auto wavy = [](int rank, int64_t i) { return std::sin(rank * 1.7 + i * 0.37) * 1e3; };
  const int64_t count = 1000;
  std::vector<float> in(count), plain(count), gradient(count);
  for (int64_t i = 0; i < count; ++i)
    in[i] = static_cast<float>(wavy(myRank, i));
  shardrt_all_reduce_f32(mask, in.data(), plain.data(), count, SHARDRT_SUM);
  shardrt_all_reduce_gradient_f32(mask, in.data(), gradient.data(), count, SHARDRT_SUM);
  ++checks;
  if (plain != gradient && ++failures <= 10)
    std::fprintf(stderr, "rank %d: gradient all_reduce in f32 differs from all_reduce%s\n", myRank,
                 axes.c_str());

  shardrt_set_reduce_precision_bf16(1);
  auto small = [](int rank, int64_t i) { return (rank * 3 + i) % 17 - 8; };
  for (int64_t n : {37, 3}) {
    std::vector<float> x(n), y(n);
    for (int64_t i = 0; i < n; ++i)
      x[i] = static_cast<float>(small(myRank, i));
    shardrt_all_reduce_gradient_f32(mask, x.data(), y.data(), n, SHARDRT_SUM);
    expectAll("gradient all_reduce in bf16 " + std::to_string(n) + " elements" + axes, y,
              [&](int64_t i) {
                int64_t sum = 0;
                for (int member : members)
                  sum += small(member, i);
                return sum;
              });
  }
  forEachScatter(members.size(), small,
                 [&](const Shape &block, const Shape &inShape, int d, std::vector<float> &x,
                     std::vector<float> &y) {
                   shardrt_reduce_scatter_gradient_f32(mask, x.data(), y.data(),
                                                       static_cast<int>(inShape.size()),
                                                       inShape.data(), d, SHARDRT_SUM);
                   expectAll("gradient reduce_scatter in bf16 " + describe(inShape) + " dim " +
                                 std::to_string(d) + axes,
                             y, [&](int64_t i) {
                               return scatteredSum(small, members, block, inShape, d, myIndex, i);
                             });
                 });
  shardrt_all_reduce_gradient_f32(mask, in.data(), gradient.data(), count, SHARDRT_SUM);
  shardrt_set_reduce_precision_bf16(0);
  std::vector<float> everyone(count * shardrt_num_ranks());
  MPI_Allgather(gradient.data(), count, MPI_FLOAT, everyone.data(), count, MPI_FLOAT,
                MPI_COMM_WORLD);
  for (int member : members) {
    ++checks;
    if (std::memcmp(&everyone[member * count], gradient.data(), count * sizeof(float)) != 0 &&
        ++failures <= 10)
      std::fprintf(stderr, "rank %d: gradient all_reduce in bf16%s differs from rank %d's\n",
                   myRank, axes.c_str(), member);
  }
  // Each term and the sum rounded to bfloat16 once, each within its unit roundoff
  // 2^-8: within 2^-7 of the terms' magnitude.
  for (int64_t i = 0; i < count; ++i) {
    double exact = 0, magnitude = 0;
    for (int member : members) {
      exact += wavy(member, i);
      magnitude += std::fabs(wavy(member, i));
    }
    ++checks;
    if (std::fabs(gradient[i] - exact) > magnitude / 128 && ++failures <= 10)
      std::fprintf(stderr,
                   "rank %d: gradient all_reduce in bf16%s: element %lld is %.9g, expected "
                   "%.9g\n",
                   myRank, axes.c_str(), static_cast<long long>(i), gradient[i], exact);
  }
}

/// The gradient all-reduces in flight (shardrt_all_reduce_gradient_start_f32, as the
/// compiled steps call them with --overlap-gradients on), in f32 and bf16: several at
/// once of sizes under and over a message piece, their inputs overwritten right after
/// the start, waited for out of order: exact sums of small integers, as are the
/// reduce-scatters' in flight; for other values
/// every rank's bits equal, in bf16 the blocking entry's, in f32 within 1e-6 of the
/// sum's magnitude.
void checkOverlappedGradients(uint32_t mask, const std::vector<int> &members, int64_t myIndex) {
  const std::string axes = " axes 0x" + std::to_string(mask);
  auto small = [](int rank, int64_t i) { return (rank * 5 + i) % 13 - 6; };
  auto wavy = [](int rank, int64_t i) { return std::sin(rank * 0.9 + i * 0.21) * 1e3; };
  for (int bf16 : {0, 1}) {
    const std::string how = std::string(bf16 ? " in bf16" : " in f32") + axes;
    shardrt_set_reduce_precision_bf16(bf16);
    const std::vector<int64_t> sizes = {37, 50000, 3};
    std::vector<std::vector<float>> in(sizes.size()), out(sizes.size());
    std::vector<int64_t> handles;
    shardrt_set_overlap_gradients(1);
    for (size_t r = 0; r < sizes.size(); ++r) {
      in[r].resize(sizes[r]);
      out[r].resize(sizes[r]);
      for (int64_t i = 0; i < sizes[r]; ++i)
        in[r][i] = static_cast<float>(small(myRank, i));
      handles.push_back(shardrt_all_reduce_gradient_start_f32(mask, in[r].data(), out[r].data(),
                                                              sizes[r], SHARDRT_SUM));
      std::fill(in[r].begin(), in[r].end(), 1e9f);
      shardrt_progress_gradients();
    }
    std::vector<float> wavyIn(1000), overlapped(1000), blocking(1000);
    for (int64_t i = 0; i < 1000; ++i)
      wavyIn[i] = static_cast<float>(wavy(myRank, i));
    int64_t wavyHandle = shardrt_all_reduce_gradient_start_f32(
        mask, wavyIn.data(), overlapped.data(), 1000, SHARDRT_SUM);
    shardrt_wait(handles[1], out[1].data());
    shardrt_wait(wavyHandle, overlapped.data());
    shardrt_wait(handles[2], out[2].data());
    shardrt_wait(handles[0], out[0].data());
    shardrt_set_overlap_gradients(0);
    for (size_t r = 0; r < sizes.size(); ++r)
      expectAll("gradient all_reduce in flight, " + std::to_string(sizes[r]) + " elements" + how,
                out[r], [&](int64_t i) {
                  int64_t sum = 0;
                  for (int member : members)
                    sum += small(member, i);
                  return sum;
                });
    ++checks;
    if ((members.size() > 1) != (wavyHandle > 0) && ++failures <= 10)
      std::fprintf(stderr, "rank %d: handle %lld for a group of %zu%s\n", myRank,
                   static_cast<long long>(wavyHandle), members.size(), how.c_str());
    std::vector<float> everyone(1000 * shardrt_num_ranks());
    MPI_Allgather(overlapped.data(), 1000, MPI_FLOAT, everyone.data(), 1000, MPI_FLOAT,
                  MPI_COMM_WORLD);
    for (int member : members) {
      ++checks;
      if (std::memcmp(&everyone[member * 1000], overlapped.data(), 1000 * sizeof(float)) != 0 &&
          ++failures <= 10)
        std::fprintf(stderr, "rank %d: gradient all_reduce in flight%s differs from rank %d's\n",
                     myRank, how.c_str(), member);
    }
    // Reduce-scatters in flight: the group's sums of this rank's block, exact.
    shardrt_set_overlap_gradients(1);
    forEachScatter(members.size(), small,
                   [&](const Shape &block, const Shape &inShape, int d, std::vector<float> &x,
                       std::vector<float> &y) {
                     int64_t h = shardrt_reduce_scatter_gradient_start_f32(
                         mask, x.data(), y.data(), static_cast<int>(inShape.size()), inShape.data(),
                         d, SHARDRT_SUM);
                     std::fill(x.begin(), x.end(), 1e9f);
                     shardrt_progress_gradients();
                     shardrt_wait(h, y.data());
                     expectAll("gradient reduce_scatter in flight " + describe(inShape) + " dim " +
                                   std::to_string(d) + how,
                               y, [&](int64_t i) {
                                 return scatteredSum(small, members, block, inShape, d, myIndex, i);
                               });
                   });
    // Two reduce-scatters and an all-reduce in flight at once, the newest waited for
    // first (which waits for the older ones too).
    {
      const Shape block = {3, 5};
      Shape inShape = block;
      inShape[1] *= static_cast<int64_t>(members.size());
      std::vector<float> x(elements(inShape)), first(elements(block)), second(elements(block)),
          terms(40), sums(40);
      for (int64_t i = 0; i < elements(inShape); ++i)
        x[i] = static_cast<float>(small(myRank, i));
      for (int64_t i = 0; i < 40; ++i)
        terms[i] = static_cast<float>(small(myRank, i));
      int64_t h1 = shardrt_reduce_scatter_gradient_start_f32(mask, x.data(), first.data(), 2,
                                                             inShape.data(), 1, SHARDRT_SUM);
      int64_t h2 = shardrt_reduce_scatter_gradient_start_f32(mask, x.data(), second.data(), 2,
                                                             inShape.data(), 1, SHARDRT_SUM);
      int64_t h3 =
          shardrt_all_reduce_gradient_start_f32(mask, terms.data(), sums.data(), 40, SHARDRT_SUM);
      shardrt_wait(h3, sums.data());
      shardrt_wait(h2, second.data());
      shardrt_wait(h1, first.data());
      auto scattered = [&](int64_t i) {
        return scatteredSum(small, members, block, inShape, 1, myIndex, i);
      };
      expectAll("first of two reduce_scatters in flight" + how, first, scattered);
      expectAll("second of two reduce_scatters in flight" + how, second, scattered);
      expectAll("all_reduce in flight after two reduce_scatters" + how, sums, [&](int64_t i) {
        int64_t sum = 0;
        for (int member : members)
          sum += small(member, i);
        return sum;
      });
    }
    // On wavy values, 8 rows of 1000 split on dim 0 (one block each) and on dim 1: the
    // blocking entry's bits on two ranks (a + b either way).
    for (int d : {0, 1}) {
      Shape inShape = {8, 1000};
      inShape[d] *= static_cast<int64_t>(members.size());
      Shape outShape = {8, 1000};
      std::vector<float> x(elements(inShape)), inFlight(elements(outShape)),
          atOnce(elements(outShape));
      for (int64_t i = 0; i < elements(inShape); ++i)
        x[i] = static_cast<float>(wavy(myRank, i));
      int64_t h = shardrt_reduce_scatter_gradient_start_f32(mask, x.data(), inFlight.data(), 2,
                                                            inShape.data(), d, SHARDRT_SUM);
      shardrt_wait(h, inFlight.data());
      shardrt_reduce_scatter_gradient_f32(mask, x.data(), atOnce.data(), 2, inShape.data(), d,
                                          SHARDRT_SUM);
      for (size_t i = 0; i < atOnce.size(); ++i) {
        ++checks;
        bool same = members.size() > 2 ? std::fabs(inFlight[i] - atOnce[i]) <= 1e-3
                                       : inFlight[i] == atOnce[i];
        if (!same && ++failures <= 10)
          std::fprintf(stderr,
                       "rank %d: gradient reduce_scatter in flight on dim %d%s: element %zu is "
                       "%.9g, the blocking entry's %.9g\n",
                       myRank, d, how.c_str(), i, inFlight[i], atOnce[i]);
      }
    }
    shardrt_set_overlap_gradients(0);
    shardrt_all_reduce_gradient_f32(mask, wavyIn.data(), blocking.data(), 1000, SHARDRT_SUM);
    for (int64_t i = 0; i < 1000; ++i) {
      double magnitude = 0;
      for (int member : members)
        magnitude += std::fabs(wavy(member, i));
      ++checks;
      if (bf16 ? overlapped[i] != blocking[i]
               : std::fabs(overlapped[i] - blocking[i]) > magnitude * 1e-6) {
        if (++failures <= 10)
          std::fprintf(stderr,
                       "rank %d: gradient all_reduce in flight%s: element %lld is %.9g, the "
                       "blocking entry's %.9g\n",
                       myRank, how.c_str(), static_cast<long long>(i), overlapped[i], blocking[i]);
      }
    }
  }
  shardrt_set_reduce_precision_bf16(0);
}

/// The parameters' gathers in flight (shardrt_all_gather_start_f32, as the compiled
/// steps call them with --prefetch-weights on): along each dimension of a 3-d shape and
/// of one over a message piece, all in flight at once beside a gradient all-reduce,
/// their inputs overwritten right after the start, waited for newest first: the
/// blocking gather's bits.
void checkPrefetchedGathers(uint32_t mask, const std::vector<int> &members) {
  const std::string axes = " axes 0x" + std::to_string(mask);
  auto wavy = [](int rank, int64_t i) { return float(std::sin(rank * 0.9 + i * 0.21) * 1e3); };
  struct Gather {
    Shape shape;
    int dim;
    std::vector<float> in, out;
    int64_t handle;
  };
  std::vector<Gather> gathers;
  for (const Shape &shape : {Shape{2, 3, 4}, Shape{3, 4000, 2}})
    for (int d = 0; d < 3; ++d)
      gathers.push_back({shape, d, {}, {}, 0});
  std::vector<float> terms(100, float(myRank)), sums(100);
  shardrt_set_prefetch_weights(SHARDRT_PREFETCH_ON);
  shardrt_set_overlap_gradients(1);
  int64_t sumHandle = 0;
  for (size_t g = 0; g < gathers.size(); ++g) {
    Gather &x = gathers[g];
    x.in.resize(elements(x.shape));
    x.out.resize(x.in.size() * members.size());
    for (size_t i = 0; i < x.in.size(); ++i)
      x.in[i] = wavy(myRank, int64_t(i + g));
    x.handle = shardrt_all_gather_start_f32(mask, x.in.data(), x.out.data(), int(x.shape.size()),
                                            x.shape.data(), x.dim);
    std::fill(x.in.begin(), x.in.end(), 1e9f);
    if (g == 2)
      sumHandle =
          shardrt_all_reduce_gradient_start_f32(mask, terms.data(), sums.data(), 100, SHARDRT_SUM);
    shardrt_progress_gradients();
  }
  for (size_t g = gathers.size(); g-- > 0;)
    shardrt_wait(gathers[g].handle, gathers[g].out.data());
  shardrt_wait(sumHandle, sums.data());
  shardrt_set_prefetch_weights(SHARDRT_PREFETCH_OFF);
  shardrt_set_overlap_gradients(0);
  for (size_t g = 0; g < gathers.size(); ++g) {
    Gather &x = gathers[g];
    const std::string what =
        "all_gather in flight " + describe(x.shape) + " dim " + std::to_string(x.dim) + axes;
    ++checks;
    if ((members.size() > 1) != (x.handle > 0) && ++failures <= 10)
      std::fprintf(stderr, "rank %d: %s: handle %lld for a group of %zu\n", myRank, what.c_str(),
                   static_cast<long long>(x.handle), members.size());
    for (size_t i = 0; i < x.in.size(); ++i)
      x.in[i] = wavy(myRank, int64_t(i + g));
    std::vector<float> atOnce(x.out.size());
    shardrt_all_gather_f32(mask, x.in.data(), atOnce.data(), int(x.shape.size()), x.shape.data(),
                           x.dim);
    ++checks;
    if (std::memcmp(atOnce.data(), x.out.data(), atOnce.size() * sizeof(float)) != 0 &&
        ++failures <= 10)
      std::fprintf(stderr, "rank %d: %s differs from the blocking gather\n", myRank, what.c_str());
  }
  expectAll("all_reduce in flight between gathers" + axes, sums, [&](int64_t) {
    int64_t sum = 0;
    for (int member : members)
      sum += member;
    return sum;
  });
  // auto: in flight where the group's ranks are on more than one host (told here by
  // their processor names).
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  std::vector<char> names(size_t(shardrt_num_ranks()) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME,
                MPI_CHAR, MPI_COMM_WORLD);
  bool spansHosts = false;
  for (int member : members)
    spansHosts |= std::strcmp(&names[size_t(member) * MPI_MAX_PROCESSOR_NAME], name) != 0;
  shardrt_set_prefetch_weights(SHARDRT_PREFETCH_ACROSS_HOSTS);
  Gather &x = gathers.front();
  int64_t handle = shardrt_all_gather_start_f32(mask, x.in.data(), x.out.data(),
                                                int(x.shape.size()), x.shape.data(), x.dim);
  shardrt_wait(handle, x.out.data());
  shardrt_set_prefetch_weights(SHARDRT_PREFETCH_OFF);
  expectEqual("auto gather in flight" + axes + " (1: on several hosts)", handle > 0, spansHosts);
}

} // namespace

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    meshSizes.push_back(std::atoll(argv[i]));
  if (meshSizes.empty()) {
    std::fprintf(stderr, "usage: %s SIZE... (the mesh's axis sizes)\n", argv[0]);
    return 2;
  }
  shardrt_init(&argc, &argv, static_cast<int>(meshSizes.size()), meshSizes.data(), nullptr);
  myRank = shardrt_rank();

  const uint32_t numMasks = 1u << meshSizes.size();
  for (uint32_t mask = 0; mask < numMasks; ++mask) {
    std::vector<int> members = groupMembers(mask);
    int64_t myIndex = std::find(members.begin(), members.end(), myRank) - members.begin();
    expectEqual("group size over 0x" + std::to_string(mask), shardrt_group_size(mask),
                members.size());
    expectEqual("group index over 0x" + std::to_string(mask), shardrt_group_index(mask), myIndex);
    checkAllReduce<float>("f32", mask, members);
    checkAllReduce<int32_t>("i32", mask, members);
    checkReplicasAgree(mask, members);
    checkAllGather<float>("f32", mask, members);
    checkAllGather<int32_t>("i32", mask, members);
    checkReduceScatter<float>("f32", mask, members, myIndex);
    checkReduceScatter<int32_t>("i32", mask, members, myIndex);
    checkAllToAll<float>("f32", mask, members, myIndex);
    checkAllToAll<int32_t>("i32", mask, members, myIndex);
    checkGradientSyncs(mask, members, myIndex);
    checkOverlappedGradients(mask, members, myIndex);
    checkPrefetchedGathers(mask, members);
  }
  expectEqual("communicators", shardrt_debug_num_communicators(), numMasks - 1);

  int64_t totals[2] = {checks, failures}, sums[2];
  MPI_Allreduce(totals, sums, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (myRank == 0) {
    std::string mesh;
    for (size_t a = 0; a < meshSizes.size(); ++a)
      mesh += (a ? "x" : "") + std::to_string(meshSizes[a]);
    if (sums[1] == 0)
      std::printf("collectives: mesh %s, %lld checks passed\n", mesh.c_str(),
                  static_cast<long long>(sums[0]));
    else
      std::printf("collectives: mesh %s, %lld of %lld checks FAILED\n", mesh.c_str(),
                  static_cast<long long>(sums[1]), static_cast<long long>(sums[0]));
  }
  shardrt_finalize();
  return sums[1] == 0 ? 0 : 1;
}
