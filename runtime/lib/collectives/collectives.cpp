// Collectives over mesh-axis subsets: all_reduce, all_gather, reduce_scatter,
// all_to_all, with MLIR shard semantics (blocks ordered by group index).
//
// A tensor is viewed around the dimension being split or joined as [outer, dim, inner].
// MPI moves contiguous blocks, one per group member; cutting `dim` into G blocks, or
// joining G blocks along it, is then the transpose [outer, G, row] <-> [G, outer, row]
// with row = the block's extent of `dim` times `inner`. When `outer` is 1 (the
// outermost dimension, or only size-1 dimensions before it) the blocks are already
// contiguous and MPI reads or writes the caller's buffers directly; otherwise the
// transposed copy goes through the scratch buffer.
#include "collectives.h"
#include "element.h"
#include "memory/scratch.h"
#include "mesh/mesh.h"
#include "ring.h"
#include "traffic.h"
#include "watchdog.h"

#include "shardrt/shardrt.h"

#include <algorithm>
#include <cstring>

namespace shardrt {

DimView viewAround(int ndim, const int64_t *shape, int d, const char *caller, const char *role) {
  if (ndim < 1 || !shape)
    fatal("%s: the tensor needs at least one dimension (ndim = %d)", caller, ndim);
  if (d < 0 || d >= ndim)
    fatal("%s: %s %d is not a dimension of a %d-d tensor", caller, role, d, ndim);
  for (int i = 0; i < ndim; ++i)
    if (shape[i] < 0)
      fatal("%s: dimension %d has negative size %lld", caller, i, static_cast<long long>(shape[i]));
  return viewOf(ndim, shape, d);
}

void requireDivisible(const DimView &view, int groupSize, int d, const char *caller) {
  if (view.dim % groupSize != 0)
    fatal("%s: dimension %d of size %lld does not divide into %d blocks, one per rank of "
          "the group",
          caller, d, static_cast<long long>(view.dim), groupSize);
}

namespace {

/// [outer][blocks][row] -> [blocks][outer][row]: makes each block contiguous.
void splitBlocks(const std::byte *src, std::byte *dst, int64_t outer, int blocks, size_t rowBytes) {
  for (int64_t o = 0; o < outer; ++o)
    for (int b = 0; b < blocks; ++b)
      std::memcpy(dst + (b * outer + o) * rowBytes, src + (o * blocks + b) * rowBytes, rowBytes);
}

/// [blocks][outer][row] -> [outer][blocks][row]: lays contiguous blocks side by side.
void joinBlocks(const std::byte *src, std::byte *dst, int64_t outer, int blocks, size_t rowBytes) {
  for (int64_t o = 0; o < outer; ++o)
    for (int b = 0; b < blocks; ++b)
      std::memcpy(dst + (o * blocks + b) * rowBytes, src + (b * outer + o) * rowBytes, rowBytes);
}

} // namespace

void copyUnlessSame(void *out, const void *in, size_t bytes) {
  if (out != in)
    std::memmove(out, in, bytes);
}

void allReduce(const char *caller, Scalar scalar, uint32_t axes, const void *in, void *out,
               int64_t count, shardrt_reduction op) {
  Group group = groupOver(axes, caller);
  ElementType type = elementType(scalar);
  MPI_Op mpiReduction = mpiOp(op, caller);
  if (count < 0)
    fatal("%s: negative element count %lld", caller, static_cast<long long>(count));
  countTraffic(TrafficKind::AllReduce, count * type.bytes, group.size);
  if (group.size == 1 || count == 0)
    return copyUnlessSame(out, in, count * type.bytes);

  // MPI's blocking all-reduce at every size: its nonblocking one and the ring are slower
  // once the heap keeps freed memory (host.cpp); bench/runtime measures it against
  // MPI_Allreduce. But a rank blocked in MPI cannot take part in a stop in the middle of
  // a step (driver_abandon.h), which sets the nonblocking one then.
  if (allReducesInAwait()) {
    arrive("all_reduce", axes, /*world=*/false, count);
    MPI_Request request;
    MPI_Iallreduce(in == out ? MPI_IN_PLACE : in, out, mpiCount(count, caller), type.mpi,
                   mpiReduction, group.comm, &request);
    return await(1, &request);
  }
  watchedBlocking("all_reduce", axes, count, [&] {
    MPI_Allreduce(in == out ? MPI_IN_PLACE : in, out, mpiCount(count, caller), type.mpi,
                  mpiReduction, group.comm);
  });
}

void allGather(const char *caller, Scalar scalar, uint32_t axes, const void *in, void *out,
               int ndim, const int64_t *localShape, int gatherDim) {
  Group group = groupOver(axes, caller);
  ElementType type = elementType(scalar);
  DimView view = viewAround(ndim, localShape, gatherDim, caller, "gather dimension");
  size_t localBytes = view.elements() * type.bytes;
  countTraffic(TrafficKind::AllGather, localBytes, group.size);
  if (group.size == 1)
    return copyUnlessSame(out, in, localBytes);

  int count = mpiCount(view.elements(), caller);
  bool contiguous = view.outer == 1;
  auto [gathered] = scratch().regions<1>(allGatherRegions(view, type.bytes, group.size));
  std::byte *received = contiguous ? static_cast<std::byte *>(out) : gathered;
  arrive("all_gather", axes, /*world=*/false, view.elements());
  MPI_Request request;
  MPI_Iallgather(in, count, type.mpi, received, count, type.mpi, group.comm, &request);
  await(1, &request);
  if (!contiguous)
    joinBlocks(received, static_cast<std::byte *>(out), view.outer, group.size,
               view.dim * view.inner * type.bytes);
}

void reduceScatter(const char *caller, Scalar scalar, uint32_t axes, const void *in, void *out,
                   int ndim, const int64_t *inShape, int scatterDim, shardrt_reduction op) {
  Group group = groupOver(axes, caller);
  ElementType type = elementType(scalar);
  MPI_Op mpiReduction = mpiOp(op, caller);
  DimView view = viewAround(ndim, inShape, scatterDim, caller, "scatter dimension");
  requireDivisible(view, group.size, scatterDim, caller);
  size_t inBytes = view.elements() * type.bytes;
  countTraffic(TrafficKind::ReduceScatter, inBytes, group.size);
  if (group.size == 1)
    return copyUnlessSame(out, in, inBytes);

  Partition partition{view.elements(), group.size};
  bool contiguous = view.outer == 1;
  bool ring = static_cast<int64_t>(inBytes) >= ringMinBytes();
  auto [packed, acc, recv] =
      scratch().regions<3>(reduceScatterRegions(view, type.bytes, group.size, ringMinBytes()));
  const std::byte *blocks = static_cast<const std::byte *>(in);
  if (!contiguous) {
    splitBlocks(blocks, packed, view.outer, group.size,
                view.dim / group.size * view.inner * type.bytes);
    blocks = packed;
  }
  arrive("reduce_scatter", axes, /*world=*/false, view.elements());
  if (ring) {
    ringReduceScatter(group, type, op, blocks, static_cast<std::byte *>(out), partition, acc, recv);
  } else {
    MPI_Request request;
    MPI_Ireduce_scatter_block(blocks, out, mpiCount(partition.size(0), caller), type.mpi,
                              mpiReduction, group.comm, &request);
    await(1, &request);
  }
}

namespace {

void allToAll(const char *caller, Scalar scalar, uint32_t axes, const void *in, void *out, int ndim,
              const int64_t *inShape, int splitDim, int concatDim) {
  Group group = groupOver(axes, caller);
  ElementType type = elementType(scalar);
  DimView split = viewAround(ndim, inShape, splitDim, caller, "split dimension");
  DimView concat = viewAround(ndim, inShape, concatDim, caller, "concat dimension");
  requireDivisible(split, group.size, splitDim, caller);
  size_t inBytes = split.elements() * type.bytes;
  countTraffic(TrafficKind::AllToAll, inBytes, group.size);
  if (group.size == 1)
    return copyUnlessSame(out, in, inBytes);

  concat = receivedBlocks(concat, splitDim, concatDim, group.size);
  int blockCount = mpiCount(split.elements() / group.size, caller);
  bool sendContiguous = split.outer == 1, recvContiguous = concat.outer == 1;
  auto [packed, received] =
      scratch().regions<2>(allToAllRegions(split, concat, type.bytes, group.size));
  const std::byte *send = static_cast<const std::byte *>(in);
  if (!sendContiguous) {
    splitBlocks(send, packed, split.outer, group.size,
                split.dim / group.size * split.inner * type.bytes);
    send = packed;
  }
  std::byte *receive = recvContiguous ? static_cast<std::byte *>(out) : received;
  arrive("all_to_all", axes, /*world=*/false, split.elements());
  MPI_Request request;
  MPI_Ialltoall(send, blockCount, type.mpi, receive, blockCount, type.mpi, group.comm, &request);
  await(1, &request);
  if (!recvContiguous)
    joinBlocks(receive, static_cast<std::byte *>(out), concat.outer, group.size,
               concat.dim * concat.inner * type.bytes);
}

} // namespace
} // namespace shardrt

using namespace shardrt;

extern "C" {

void shardrt_all_reduce_f32(uint32_t axes, const float *in, float *out, int64_t count,
                            shardrt_reduction op) {
  allReduce("shardrt_all_reduce_f32", Scalar::F32, axes, in, out, count, op);
}

void shardrt_all_reduce_i32(uint32_t axes, const int32_t *in, int32_t *out, int64_t count,
                            shardrt_reduction op) {
  allReduce("shardrt_all_reduce_i32", Scalar::I32, axes, in, out, count, op);
}

void shardrt_all_gather_f32(uint32_t axes, const float *in, float *out, int ndim,
                            const int64_t *local_shape, int gather_dim) {
  allGather("shardrt_all_gather_f32", Scalar::F32, axes, in, out, ndim, local_shape, gather_dim);
}

void shardrt_all_gather_i32(uint32_t axes, const int32_t *in, int32_t *out, int ndim,
                            const int64_t *local_shape, int gather_dim) {
  allGather("shardrt_all_gather_i32", Scalar::I32, axes, in, out, ndim, local_shape, gather_dim);
}

void shardrt_reduce_scatter_f32(uint32_t axes, const float *in, float *out, int ndim,
                                const int64_t *in_shape, int scatter_dim, shardrt_reduction op) {
  reduceScatter("shardrt_reduce_scatter_f32", Scalar::F32, axes, in, out, ndim, in_shape,
                scatter_dim, op);
}

void shardrt_reduce_scatter_i32(uint32_t axes, const int32_t *in, int32_t *out, int ndim,
                                const int64_t *in_shape, int scatter_dim, shardrt_reduction op) {
  reduceScatter("shardrt_reduce_scatter_i32", Scalar::I32, axes, in, out, ndim, in_shape,
                scatter_dim, op);
}

void shardrt_all_to_all_f32(uint32_t axes, const float *in, float *out, int ndim,
                            const int64_t *in_shape, int split_dim, int concat_dim) {
  allToAll("shardrt_all_to_all_f32", Scalar::F32, axes, in, out, ndim, in_shape, split_dim,
           concat_dim);
}

void shardrt_all_to_all_i32(uint32_t axes, const int32_t *in, int32_t *out, int ndim,
                            const int64_t *in_shape, int split_dim, int concat_dim) {
  allToAll("shardrt_all_to_all_i32", Scalar::I32, axes, in, out, ndim, in_shape, split_dim,
           concat_dim);
}

} // extern "C"
