// The parameters' gradients reduced across ranks: the all_reduces and reduce_scatters
// that shardc-mark-gradient-syncs marks (shardrt.h).
//
// In bfloat16 (--reduce-precision bf16), as PyTorch's bf16_compress_hook and FSDP's
// reduce_dtype send them: half the bytes. Each rank rounds its gradient to bf16 and
// sends block g to the rank of group index g (MPI_Alltoall), which sums the group's
// blocks in f32, in group order; an all-reduce then rounds each sum to bf16 once and
// all-gathers them. Every element is summed in one place, so every rank gets the same
// bits, as the replicated parameters need (MPI's all-reduce with a user-defined bf16
// sum promises that to no one).
//
// Overlapped with the backward pass (--overlap-gradients on), as PyTorch's DDP overlaps
// its buckets: the compiled step starts a gradient's all-reduce or reduce-scatter as soon
// as the gradient exists (shardrt_*_gradient_start_f32) and waits for it just before the
// first op that reads the sum (shardrt_wait). The reduction in flight takes the same
// steps as bf16's (a reduce-scatter the first alone), in f32 or bf16, point to point
// (MPI_Isend/Irecv in pieces under the eager limit): MPI's nonblocking all-reduce
// (libnbc) is slower than the blocking one between hosts and hides nothing
// (bench/overlap measures the overlap across two hosts). MPI moves a message only inside
// an MPI call, so the kernels call progressGradients() before each product, and the
// compiled step before each large loop nest.
//
// The parameters' gathers under FSDP go the same way (--prefetch-weights on): the
// compiled step starts each one before the op that reads the weight before
// (shardc-prefetch-gathers) and waits just before its own reader; every rank sends its
// block to every other rank of the group.
#include "collectives.h"
#include "element.h"
#include "memory/scratch.h"
#include "mesh/mesh.h"
#include "traffic.h"
#include "watchdog.h"

#include "shardrt/shardrt.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

namespace shardrt {
namespace {

bool gradientsInBf16 = false;
bool overlapGradients = false;
shardrt_prefetch prefetchWeights = SHARDRT_PREFETCH_OFF;

/// The bf16 blocks and sums of a blocking reduction, in a buffer of their own:
/// reduceScatter's packing and ring take the runtime's scratch buffer.
ScratchBuffer &gradientStaging() {
  static ScratchBuffer buffer;
  return buffer;
}

/// `count` values rounded to bf16 into `blocks`, then zeros up to `padded`.
void roundToBf16(const float *in, int64_t count, int64_t padded, uint16_t *blocks) {
  for (int64_t i = 0; i < count; ++i)
    blocks[i] = toBf16(in[i]);
  std::fill(blocks + count, blocks + padded, uint16_t(0));
}

/// `count` values as they are sent (f32, or rounded to `bf16`) into `to`, then zeros up
/// to `padded`.
void pack(const float *in, int64_t count, int64_t padded, bool bf16, std::byte *to) {
  if (bf16)
    return roundToBf16(in, count, padded, reinterpret_cast<uint16_t *>(to));
  std::memcpy(to, in, size_t(count) * sizeof(float));
  std::fill(reinterpret_cast<float *>(to) + count, reinterpret_cast<float *>(to) + padded, 0.0f);
}

/// A reduce-scatter's input of shape `view` packed as it is sent: block b, for the rank
/// of group index b, is [outer][row] of the input's rows b (as splitBlocks lays them
/// out); returns the values of a block.
int64_t packScatterBlocks(const float *in, const DimView &view, int groupSize, bool bf16,
                          std::byte *to) {
  const int64_t row = view.dim / groupSize * view.inner;
  const size_t rowBytes = size_t(row) * (bf16 ? 2 : sizeof(float));
  for (int b = 0; b < groupSize; ++b)
    for (int64_t o = 0; o < view.outer; ++o)
      pack(in + (o * groupSize + b) * row, row, row, bf16, to + (b * view.outer + o) * rowBytes);
  return view.outer * row;
}

/// The `n` values at `from` (f32, or bf16) in f32 into `to`, or added to it.
void toF32(const std::byte *from, int64_t n, bool bf16, float *to, bool add) {
  const auto *f = reinterpret_cast<const float *>(from);
  const auto *h = reinterpret_cast<const uint16_t *>(from);
  for (int64_t i = 0; i < n; ++i) {
    float x = bf16 ? fromBf16(h[i]) : f[i];
    to[i] = add ? to[i] + x : x;
  }
}

/// The `groupSize` blocks of `block` values (f32, or bf16) in `received`, summed in
/// f32 in group order into `sum`.
void sumBlocks(const std::byte *received, int groupSize, int64_t block, bool bf16, float *sum) {
  const size_t blockBytes = size_t(block) * (bf16 ? 2 : sizeof(float));
  for (int g = 0; g < groupSize; ++g)
    toF32(received + g * blockBytes, block, bf16, sum, /*add=*/g > 0);
}

/// Rank g's block of `blocks` (`group.size` blocks of `block` bf16 values each, block
/// b for group index b): the group's blocks g summed in f32, in group order, into
/// `sum`. `received` holds group.size blocks.
void sumBlocksInBf16(const Group &group, const std::byte *blocks, std::byte *received,
                     int64_t block, float *sum, const char *caller) {
  int count = mpiCount(block, caller);
  MPI_Alltoall(blocks, count, MPI_UINT16_T, received, count, MPI_UINT16_T, group.comm);
  sumBlocks(received, group.size, block, /*bf16=*/true, sum);
}

/// The blocks an all-reduce of `count` values in bf16 sends, one per rank of a group
/// of `groupSize`, each `block` values long.
struct Blocks {
  int64_t block, padded;
  Blocks(int64_t count, int groupSize)
      : block((count + groupSize - 1) / groupSize), padded(block * groupSize) {}
};

void allReduceGradient(const Group &group, uint32_t axes, const float *in, float *out,
                       int64_t count, const char *caller) {
  const Blocks b(count, group.size);
  auto [sent, received, sum] = gradientStaging().regions<3>(
      {size_t(b.padded) * 2, size_t(b.padded) * 2, size_t(b.block) * sizeof(float)});
  auto *sums = reinterpret_cast<float *>(sum);
  pack(in, count, b.padded, /*bf16=*/true, sent);
  countTraffic(TrafficKind::AllReduce, count * 2, group.size);
  watchedBlocking("all_reduce", axes, count, [&] {
    sumBlocksInBf16(group, sent, received, b.block, sums, caller);
    pack(sums, b.block, b.block, /*bf16=*/true, sent);
    MPI_Allgather(sent, mpiCount(b.block, caller), MPI_UINT16_T, received,
                  mpiCount(b.block, caller), MPI_UINT16_T, group.comm);
  });
  toF32(received, count, /*bf16=*/true, out, /*add=*/false);
}

void reduceScatterGradient(const Group &group, uint32_t axes, const float *in, float *out, int ndim,
                           const int64_t *inShape, int scatterDim, const char *caller) {
  DimView view = viewAround(ndim, inShape, scatterDim, caller, "scatter dimension");
  requireDivisible(view, group.size, scatterDim, caller);
  auto [sent, received] =
      gradientStaging().regions<2>({size_t(view.elements()) * 2, size_t(view.elements()) * 2});
  const int64_t block = packScatterBlocks(in, view, group.size, /*bf16=*/true, sent);
  countTraffic(TrafficKind::ReduceScatter, view.elements() * 2, group.size);
  watchedBlocking("reduce_scatter", axes, view.elements(),
                  [&] { sumBlocksInBf16(group, sent, received, block, out, caller); });
}

bool inBf16(const Group &group, shardrt_reduction op) {
  return gradientsInBf16 && op == SHARDRT_SUM && group.size > 1;
}

/// A message of a reduction in flight is cut into pieces of at most this many bytes,
/// under Open MPI's eager limits (TCP 64 KiB), so that each piece leaves when it is
/// posted, without a handshake that would wait for the peer's next MPI call.
constexpr int64_t kPieceBytes = 32 << 10;
/// The tags of a reduction's two steps' messages, and of a gather's.
constexpr int kBlocksTag = 0x5d0, kSumsTag = 0x5d1, kGatherTag = 0x5d2;

/// A gradient's reduction in flight, point to point: each rank sends block g of its
/// gradient (f32, or rounded to bf16) to the rank of group index g, which sums the
/// group's blocks in f32 in group order. A reduce-scatter (`scatter`) is then done;
/// an all-reduce (`summed`) sends its sums (in f32, or rounded once to bf16) to every
/// other rank. Each element is summed in one place, so every rank gets the same bits.
/// Or a parameter's gather (`gather`): each rank sends its block to every other rank.
struct InFlight {
  Group group{};
  float *out = nullptr;
  int64_t count = 0; // of the output
  int64_t block = 0; // values of one block
  bool bf16 = false, scatter = false, summed = false, gather = false;
  int64_t outer = 1; // rows of a gather's block ([outer][row]; the output [outer][group][row])
  std::vector<MPI_Request> requests;
  ScratchBuffer *staging = nullptr;
  std::byte *sent = nullptr, *received = nullptr;
  float *sums = nullptr;

  size_t elementBytes() const { return bf16 ? 2 : sizeof(float); }
  /// An all-reduce that has not sent its sums: it holds back the younger ones of its
  /// group (advanceInFlight).
  bool sumsPending() const { return !(summed || scatter || gather); }

  /// Posts one step's messages, in pieces: block g of `from` to the rank of group
  /// index g (`toOwners`), or `from`, this rank's block, to every other rank; and
  /// the block of each other rank into its place in `into`. This rank's own block is
  /// copied.
  void exchange(const std::byte *from, std::byte *into, bool toOwners, int tag) {
    const size_t bytes = size_t(block) * elementBytes();
    requests.clear();
    for (int g = 0; g < group.size; ++g) {
      const std::byte *send = toOwners ? from + g * bytes : from;
      if (g == group.index) {
        std::memcpy(into + g * bytes, send, bytes);
        continue;
      }
      for (size_t at = 0; at < bytes; at += kPieceBytes) {
        int n = int(std::min<size_t>(kPieceBytes, bytes - at));
        requests.emplace_back();
        MPI_Irecv(into + g * bytes + at, n, MPI_BYTE, g, tag, group.comm, &requests.back());
        requests.emplace_back();
        MPI_Isend(send + at, n, MPI_BYTE, g, tag, group.comm, &requests.back());
      }
    }
  }

  /// Posts a gather's messages: this rank's block (`sent`, [outer][row]) to every other
  /// rank, and each other rank's block straight into its place in `out` ([outer][group]
  /// [row]), in pieces of whole rows (received as an MPI vector) or parts of one row.
  /// No staging the size of the output: a weight gathered along an inner dimension
  /// needs no more memory than one gathered along the outermost.
  void exchangeGather(int tag) {
    const int64_t row = block / outer;
    const int64_t rowsPerPiece = std::max<int64_t>(1, kPieceBytes / (row * int64_t(sizeof(float))));
    const int64_t floatsPerPiece = kPieceBytes / int64_t(sizeof(float));
    const auto *own = reinterpret_cast<const float *>(sent);
    auto placeOf = [&](int g, int64_t o) { return out + (o * group.size + g) * row; };
    requests.clear();
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(placeOf(group.index, o), own + o * row, size_t(row) * sizeof(float));
    auto post = [&](int g, float *into, int intoCount, MPI_Datatype intoType, const float *from,
                    int64_t count) {
      requests.emplace_back();
      MPI_Irecv(into, intoCount, intoType, g, tag, group.comm, &requests.back());
      requests.emplace_back();
      MPI_Isend(from, int(count), MPI_FLOAT, g, tag, group.comm, &requests.back());
    };
    for (int g = 0; g < group.size; ++g) {
      if (g == group.index)
        continue;
      for (int64_t o = 0; o < outer; o += rowsPerPiece) {
        const int64_t rows = std::min(rowsPerPiece, outer - o);
        if (rows > 1) {
          post(g, placeOf(g, o), 1, rowsType(rows, row, group.size), own + o * row, rows * row);
          continue;
        }
        for (int64_t at = 0; at < row; at += floatsPerPiece) {
          const int64_t n = std::min(floatsPerPiece, row - at);
          post(g, placeOf(g, o) + at, int(n), MPI_FLOAT, own + o * row + at, n);
        }
      }
    }
  }

  /// `rows` rows of `row` floats, each `groupSize` rows apart: where one rank's rows of
  /// a gather go. Committed once per shape and kept.
  static MPI_Datatype rowsType(int64_t rows, int64_t row, int groupSize) {
    static std::map<std::tuple<int64_t, int64_t, int>, MPI_Datatype> types;
    auto [it, isNew] = types.try_emplace({rows, row, groupSize}, MPI_DATATYPE_NULL);
    if (isNew) {
      MPI_Type_vector(int(rows), int(row), int(row) * groupSize, MPI_FLOAT, &it->second);
      MPI_Type_commit(&it->second);
    }
    return it->second;
  }

  /// Once the messages of the current step have arrived: a gather is done; a reduction
  /// sums this rank's block (into `out` for a reduce-scatter, done) and sends the sums
  /// (false: not complete yet), or writes the gathered sums to `out`.
  bool advance() {
    if (gather)
      return true;
    if (!summed) {
      sumBlocks(received, group.size, block, bf16, scatter ? out : sums);
      if (scatter)
        return true;
      pack(sums, block, block, bf16, sent);
      exchange(sent, received, /*toOwners=*/false, kSumsTag);
      summed = true;
      return false;
    }
    toF32(received, count, bf16, out, /*add=*/false);
    return true;
  }
};

/// By handle, 1, 2, ... in the order they started.
std::map<int64_t, InFlight> inFlight;
int64_t lastHandle = 0;

/// The staging buffers of the reductions in flight. A step starts the same
/// reductions in the same order every time, so each buffer settles at one size after
/// the first step and its pages are touched once (scratch.h).
std::vector<std::unique_ptr<ScratchBuffer>> stagingPool;
std::vector<ScratchBuffer *> freeStaging;

ScratchBuffer *takeStaging() {
  if (freeStaging.empty()) {
    stagingPool.push_back(std::make_unique<ScratchBuffer>(/*doubles=*/false));
    return stagingPool.back().get();
  }
  ScratchBuffer *buffer = freeStaging.back();
  freeStaging.pop_back();
  return buffer;
}

/// A collective over `group` of `block` values per rank into the `count` values at
/// `out`, told to the watchdog as `kind`, with staging from the pool.
InFlight starting(const Group &group, uint32_t axes, const char *kind, float *out, int64_t count,
                  int64_t block) {
  arrive(kind, axes, /*world=*/false, block * group.size);
  InFlight r;
  r.group = group;
  r.out = out;
  r.count = count;
  r.block = block;
  r.staging = takeStaging();
  return r;
}

/// Keeps `r`, whose messages are posted, in flight; returns its handle.
int64_t track(const InFlight &r) {
  inFlight.emplace(++lastHandle, r);
  return lastHandle;
}

/// Puts in flight a reduction over `group` of one block of `block` values per rank,
/// whose result is the `count` values at `out`: `packInto` writes the blocks (f32, or
/// bf16 when `bf16`) into the staging it is given, block g for the rank of group
/// index g. Returns the handle.
template <typename Pack>
int64_t launch(const Group &group, uint32_t axes, const char *kind, float *out, int64_t count,
               int64_t block, bool bf16, bool scatter, Pack packInto) {
  InFlight r = starting(group, axes, kind, out, count, block);
  r.bf16 = bf16;
  r.scatter = scatter;
  // A reduce-scatter's message is its input, of every rank's block; an all-reduce's its
  // `count` values, not the padded blocks.
  countTraffic(scatter ? TrafficKind::ReduceScatter : TrafficKind::AllReduce,
               (scatter ? block * group.size : count) * int64_t(r.elementBytes()), group.size);
  const size_t bytes = size_t(block) * group.size * r.elementBytes();
  auto [sent, received, sums] =
      r.staging->regions<3>({bytes, bytes, scatter ? 0 : size_t(block) * sizeof(float)});
  r.sent = sent;
  r.received = received;
  r.sums = reinterpret_cast<float *>(sums);
  packInto(sent);
  r.exchange(r.sent, r.received, /*toOwners=*/true, kBlocksTag);
  return track(r);
}

/// Puts in flight a gather over `group` of `in`, of shape `view` around the gathered
/// dimension, into `out`. Returns the handle.
int64_t launchGather(const Group &group, uint32_t axes, const float *in, float *out,
                     const DimView &view) {
  InFlight r =
      starting(group, axes, "all_gather", out, view.elements() * group.size, view.elements());
  r.gather = true;
  r.outer = view.outer;
  countTraffic(TrafficKind::AllGather, view.elements() * int64_t(sizeof(float)), group.size);
  const size_t bytes = size_t(r.block) * sizeof(float);
  auto [sent] = r.staging->regions<1>({bytes});
  std::memcpy(sent, in, bytes);
  r.sent = sent;
  r.exchangeGather(kGatherTag);
  return track(r);
}

/// Advances the reductions in flight, oldest first, up to `until` (every one for -1):
/// `wait` waits for each step's messages, otherwise only reductions whose messages
/// have all arrived move on. An all-reduce sends its sums only after the older ones of
/// its group have sent theirs: every rank then posts the same sequence of messages of
/// each tag, and MPI matches them in order (a reduce-scatter sends none).
void advanceInFlight(int64_t until, bool wait) {
  // The groups with an older all-reduce that has not sent its sums (few: a vector,
  // kept from call to call, since the kernels call this often).
  static std::vector<MPI_Comm> blocked;
  blocked.clear();
  for (auto it = inFlight.begin(); it != inFlight.end() && (until < 0 || it->first <= until);) {
    InFlight &r = it->second;
    bool groupBlocked = std::find(blocked.begin(), blocked.end(), r.group.comm) != blocked.end();
    bool complete = false;
    while (!r.sumsPending() || !groupBlocked) {
      int done = 1;
      if (wait)
        await(int(r.requests.size()), r.requests.data());
      else
        MPI_Testall(int(r.requests.size()), r.requests.data(), &done, MPI_STATUSES_IGNORE);
      if (!done || (complete = r.advance()))
        break;
    }
    if (!groupBlocked && r.sumsPending())
      blocked.push_back(r.group.comm);
    if (complete)
      freeStaging.push_back(r.staging);
    it = complete ? inFlight.erase(it) : std::next(it);
  }
}

/// Whether the group's ranks are on more than one host: some member is not among this
/// host's ranks (the watchdog's host communicator). The same answer on every member.
bool spansHosts(const Group &group) {
  static std::map<MPI_Comm, bool> spans;
  auto [it, isNew] = spans.try_emplace(group.comm, false);
  if (isNew) {
    MPI_Group members, host, onHost;
    MPI_Comm_group(group.comm, &members);
    MPI_Comm_group(hostCommunicator(), &host);
    MPI_Group_intersection(members, host, &onHost);
    int size = 0;
    MPI_Group_size(onHost, &size);
    for (MPI_Group *g : {&members, &host, &onHost})
      MPI_Group_free(g);
    it->second = size < group.size;
  }
  return it->second;
}

/// Whether a parameter's gather over `group` goes in flight: --prefetch-weights on, or
/// auto and the group spans hosts (on one host it changes little and costs MPI's
/// buffers for the messages in flight).
bool prefetches(const Group &group) {
  if (group.size == 1 || prefetchWeights == SHARDRT_PREFETCH_OFF)
    return false;
  return prefetchWeights == SHARDRT_PREFETCH_ON || spansHosts(group);
}

/// Whether a sum over `group` goes in flight (--overlap-gradients on).
bool overlaps(const Group &group, shardrt_reduction op) {
  return overlapGradients && group.size > 1 && op == SHARDRT_SUM;
}

} // namespace

void progressGradients() {
  if (!inFlight.empty())
    advanceInFlight(-1, /*wait=*/false);
}

} // namespace shardrt

using namespace shardrt;

extern "C" {

void shardrt_all_reduce_gradient_f32(uint32_t axes, const float *in, float *out, int64_t count,
                                     shardrt_reduction op) {
  const char *caller = "shardrt_all_reduce_gradient_f32";
  if (count < 0)
    fatal("%s: negative element count %lld", caller, static_cast<long long>(count));
  if (Group group = groupOver(axes, caller); inBf16(group, op))
    allReduceGradient(group, axes, in, out, count, caller);
  else
    allReduce(caller, Scalar::F32, axes, in, out, count, op);
}

int64_t shardrt_all_reduce_gradient_start_f32(uint32_t axes, const float *in, float *out,
                                              int64_t count, shardrt_reduction op) {
  const char *caller = "shardrt_all_reduce_gradient_start_f32";
  Group group = groupOver(axes, caller);
  if (count <= 0 || !overlaps(group, op)) {
    shardrt_all_reduce_gradient_f32(axes, in, out, count, op);
    return 0;
  }
  const Blocks b(count, group.size);
  const bool bf16 = inBf16(group, op);
  return launch(group, axes, "all_reduce", out, count, b.block, bf16, /*scatter=*/false,
                [&](std::byte *sent) { pack(in, count, b.padded, bf16, sent); });
}

void shardrt_wait(int64_t handle, const float *out) {
  auto it = inFlight.find(handle);
  if (it == inFlight.end())
    return;
  if (it->second.out != out)
    fatal("shardrt_wait: collective %lld writes its result to %p, not to %p: the compiled "
          "step reads another buffer than the one it started the collective with",
          static_cast<long long>(handle), static_cast<void *>(it->second.out),
          static_cast<const void *>(out));
  advanceInFlight(handle, /*wait=*/true);
  if (inFlight.count(handle))
    fatal("shardrt_wait: collective %lld is still in flight after its wait (a runtime bug)",
          static_cast<long long>(handle));
}

void shardrt_reduce_scatter_gradient_f32(uint32_t axes, const float *in, float *out, int ndim,
                                         const int64_t *in_shape, int scatter_dim,
                                         shardrt_reduction op) {
  const char *caller = "shardrt_reduce_scatter_gradient_f32";
  if (Group group = groupOver(axes, caller); inBf16(group, op))
    reduceScatterGradient(group, axes, in, out, ndim, in_shape, scatter_dim, caller);
  else
    reduceScatter(caller, Scalar::F32, axes, in, out, ndim, in_shape, scatter_dim, op);
}

int64_t shardrt_reduce_scatter_gradient_start_f32(uint32_t axes, const float *in, float *out,
                                                  int ndim, const int64_t *in_shape,
                                                  int scatter_dim, shardrt_reduction op) {
  const char *caller = "shardrt_reduce_scatter_gradient_start_f32";
  Group group = groupOver(axes, caller);
  DimView view = viewAround(ndim, in_shape, scatter_dim, caller, "scatter dimension");
  if (view.elements() == 0 || !overlaps(group, op)) {
    shardrt_reduce_scatter_gradient_f32(axes, in, out, ndim, in_shape, scatter_dim, op);
    return 0;
  }
  requireDivisible(view, group.size, scatter_dim, caller);
  const int64_t block = view.elements() / group.size;
  const bool bf16 = inBf16(group, op);
  return launch(group, axes, "reduce_scatter", out, block, block, bf16, /*scatter=*/true,
                [&](std::byte *sent) { packScatterBlocks(in, view, group.size, bf16, sent); });
}

void shardrt_set_reduce_precision_bf16(int32_t enabled) { gradientsInBf16 = enabled != 0; }

void shardrt_progress_gradients(void) { progressGradients(); }

void shardrt_set_overlap_gradients(int32_t enabled) { overlapGradients = enabled != 0; }

int64_t shardrt_all_gather_start_f32(uint32_t axes, const float *in, float *out, int ndim,
                                     const int64_t *local_shape, int gather_dim) {
  const char *caller = "shardrt_all_gather_start_f32";
  Group group = groupOver(axes, caller);
  DimView view = viewAround(ndim, local_shape, gather_dim, caller, "gather dimension");
  if (view.elements() == 0 || !prefetches(group)) {
    allGather(caller, Scalar::F32, axes, in, out, ndim, local_shape, gather_dim);
    return 0;
  }
  return launchGather(group, axes, in, out, view);
}

void shardrt_set_prefetch_weights(shardrt_prefetch when) { prefetchWeights = when; }

} // extern "C"
