// Loading, shuffling and batching the data of the bound inputs.
//
// Loading is one round per host:
//  1. The host's first rank maps the raw arrays and produces the others into shared
//     memory files (POSIX shm, or a file in $TMPDIR when /dev/shm has no room; space
//     reserved with posix_fallocate, so a full file system is an error and not a
//     SIGBUS), then checks the values of every bound slice.
//  2. It broadcasts its verdict and the shared files' names to the host's ranks, which
//     map the same arrays; after a barrier the names are unlinked (the mappings stay).
//  3. A verdict over all ranks: the first rank that failed says why.
#include "driver_data.h"
#include "collectives/watchdog.h"
#include "mesh/mesh.h"
#include "random/prng.h"

#include <mpi.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>

namespace shardrt {
namespace {

using data::DataError;
using data::ElementType;

/// Where a produced array lives while the host's ranks map it: shared memory
/// ("shm:/NAME"), or when /dev/shm has no room for it, a file in $TMPDIR ("file:PATH").
int openShared(const std::string &name, int flags) {
  const std::string path = name.substr(name.find(':') + 1);
  return name.rfind("shm:", 0) == 0 ? shm_open(path.c_str(), flags, 0600)
                                    : open(path.c_str(), flags, 0600);
}

void unlinkShared(const std::string &name) {
  const std::string path = name.substr(name.find(':') + 1);
  if (name.rfind("shm:", 0) == 0)
    shm_unlink(path.c_str());
  else
    unlink(path.c_str());
}

/// Maps `length` bytes of a data file (`shared` empty) or of a produced array from
/// `offset`, read-only; returns element 0.
const uint8_t *mapFile(const std::string &path, const std::string &shared, uint64_t offset,
                       size_t length, std::vector<DataArrays::Mapping> &mappings) {
  const std::string &what = shared.empty() ? path : shared;
  const int fd = shared.empty() ? open(path.c_str(), O_RDONLY) : openShared(shared, O_RDONLY);
  if (fd < 0)
    throw DataError("'" + what + "': cannot open it: " + std::strerror(errno));
  const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE)), start = offset / page * page;
  const size_t span = std::max<size_t>(1, length + size_t(offset - start));
  void *address = mmap(nullptr, span, PROT_READ, MAP_SHARED, fd, off_t(start));
  const int error = errno;
  close(fd);
  if (address == MAP_FAILED)
    throw DataError("'" + what + "': cannot map it: " + std::strerror(error));
  mappings.push_back({address, span});
  return static_cast<const uint8_t *>(address) + (offset - start);
}

/// A new shared file of `bytes` with its space reserved (so that a full file system is
/// an error here, not a SIGBUS later), or -1 with errno set.
int createShared(const std::string &name, size_t bytes) {
  const int fd = openShared(name, O_RDWR | O_CREAT | O_EXCL);
  if (fd < 0)
    return -1;
  if (int error = posix_fallocate(fd, 0, off_t(bytes))) {
    close(fd);
    unlinkShared(name);
    errno = error;
    return -1;
  }
  return fd;
}

/// Produces the array `bound` reads into a new shared file; returns its name. An array
/// that cannot be produced names the input it was to feed.
std::string produceShared(const BoundInput &bound, int index) {
  const data::ArrayPlan &array = bound.array;
  const std::string id = "shardrt-" + std::to_string(getpid()) + "-" + std::to_string(index);
  const char *tmp = std::getenv("TMPDIR");
  const std::string fallback = "file:" + std::string(tmp && *tmp ? tmp : "/tmp") + "/." + id;
  const size_t bytes = std::max<uint64_t>(1, array.bytes());
  std::string name = "shm:/" + id;
  int fd = createShared(name, bytes);
  if (fd < 0) {
    name = fallback;
    fd = createShared(name, bytes);
  }
  if (fd < 0)
    throw DataError(array.what + ": cannot hold its " + bytesText(int64_t(bytes)) +
                    " in shared memory (/dev/shm) or in '" + fallback.substr(5) +
                    "': " + std::strerror(errno));
  void *address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (address == MAP_FAILED) {
    unlinkShared(name);
    throw DataError(array.what + ": cannot map shared memory: " + std::strerror(errno));
  }
  try {
    array.produce(static_cast<uint8_t *>(address));
  } catch (const DataError &error) {
    munmap(address, bytes);
    unlinkShared(name);
    throw DataError(bound.what + ": " + error.what());
  } catch (...) {
    munmap(address, bytes);
    unlinkShared(name);
    throw;
  }
  munmap(address, bytes);
  return name;
}

template <typename T> T elementAt(const uint8_t *base, int64_t index) {
  T value;
  std::memcpy(&value, base + size_t(index) * sizeof(T), sizeof(T));
  return value;
}

/// Element `index` of an integer array, widened.
int64_t integerAt(ElementType type, const uint8_t *base, int64_t index) {
  switch (type) {
  case ElementType::U8:
    return base[index];
  case ElementType::U16:
    return elementAt<uint16_t>(base, index);
  case ElementType::U32:
    return elementAt<uint32_t>(base, index);
  case ElementType::I32:
    return elementAt<int32_t>(base, index);
  case ElementType::I64:
    return elementAt<int64_t>(base, index);
  case ElementType::F32:
  case ElementType::F64:
    break;
  }
  return 0;
}

/// The elements example `example` of `bound` starts at, and how many it has.
int64_t exampleStart(const BoundInput &bound, int64_t exampleSize, int64_t example) {
  const int64_t at = bound.first + example;
  return bound.view == View::Rows ? at * exampleSize
                                  : at * exampleSize + (bound.view == View::NextWindows);
}

/// The values an i32 input reads must fit: labels in [0, classes), others in i32.
void checkIntegers(const BoundInput &bound, const uint8_t *base) {
  if (bound.dtype != DType::I32)
    return;
  const int64_t exampleSize = bound.exampleSize;
  for (int64_t e = 0; e < bound.count; ++e) {
    const int64_t start = exampleStart(bound, exampleSize, e);
    for (int64_t j = 0; j < exampleSize; ++j) {
      const int64_t value = integerAt(bound.array.type, base, start + j);
      const bool fits = bound.classes ? value >= 0 && value < bound.classes
                                      : value >= INT32_MIN && value <= INT32_MAX;
      if (!fits)
        throw DataError(bound.array.what + ": value " + std::to_string(value) + " of example " +
                        std::to_string(bound.first + e) + " " +
                        (bound.classes ? "is not a class 0.." + std::to_string(bound.classes - 1) +
                                             " of the one_hot that " + bound.what + " feeds"
                                       : "does not fit the i32 of " + bound.what));
    }
  }
}

std::vector<const BoundInput *> boundInputs(const DataPlan &plan) {
  std::vector<const BoundInput *> all;
  for (const DataSplit *split : {&plan.train, &plan.eval})
    for (const BoundInput &bound : split->inputs)
      all.push_back(&bound);
  return all;
}

void broadcastText(std::string &text, MPI_Comm comm) {
  int64_t size = int64_t(text.size());
  MPI_Bcast(&size, 1, MPI_INT64_T, 0, comm);
  text.resize(size_t(size));
  MPI_Bcast(text.data(), int(size), MPI_CHAR, 0, comm);
}

} // namespace

DataArrays::~DataArrays() {
  for (const Mapping &mapping : mappings_)
    munmap(mapping.address, mapping.length);
}

bool loadData(const DataPlan &plan, DataArrays &arrays) {
  MPI_Comm host = hostCommunicator();
  int hostRank = 0, rank = 0;
  MPI_Comm_rank(host, &hostRank);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // The distinct arrays, in plan order: several inputs may read one (a token file's
  // inputs and targets).
  std::vector<const BoundInput *> distinct;
  for (const BoundInput *bound : boundInputs(plan))
    if (std::none_of(distinct.begin(), distinct.end(),
                     [&](const BoundInput *seen) { return seen->arrayKey == bound->arrayKey; }))
      distinct.push_back(bound);

  std::string error;
  std::vector<std::string> shared; // per array, its shared file's name, or "" when raw
  auto mapAll = [&] {
    for (size_t i = 0; i < distinct.size(); ++i) {
      const data::ArrayPlan &array = distinct[i]->array;
      arrays.base_[distinct[i]->arrayKey] =
          mapFile(array.path, shared[i], shared[i].empty() ? array.offset : 0, array.bytes(),
                  arrays.mappings_);
    }
  };
  int hostFailed = 0;
  std::string names; // the host's first rank's `shared`, a line each
  if (hostRank == 0) {
    try {
      for (size_t i = 0; i < distinct.size(); ++i)
        shared.push_back(distinct[i]->array.produce ? produceShared(*distinct[i], int(i)) : "");
      mapAll();
      for (const BoundInput *bound : boundInputs(plan))
        checkIntegers(*bound, arrays.find(bound->arrayKey));
    } catch (const DataError &failure) {
      error = failure.what();
      hostFailed = 1;
    }
    for (const std::string &name : shared)
      names += name + "\n";
  }
  MPI_Bcast(&hostFailed, 1, MPI_INT, 0, host);
  broadcastText(names, host);
  if (hostRank != 0 && !hostFailed) {
    for (size_t at = 0, end; (end = names.find('\n', at)) != std::string::npos; at = end + 1)
      shared.push_back(names.substr(at, end - at));
    try {
      mapAll();
    } catch (const DataError &failure) {
      error = failure.what();
    }
  } else if (hostRank != 0) {
    error = "the data of this host could not be loaded";
  }
  MPI_Barrier(host);
  if (hostRank == 0)
    for (const std::string &name : shared)
      if (!name.empty())
        unlinkShared(name);

  int firstFailed = error.empty() ? INT_MAX : rank;
  watchedWorld("all_reduce of the data's verdict", [&](MPI_Request *request) {
    MPI_Iallreduce(MPI_IN_PLACE, &firstFailed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, request);
  });
  if (firstFailed == rank)
    std::fprintf(stderr, "shardrt: error: %s\n", error.c_str());
  return firstFailed == INT_MAX;
}

void shuffle(std::vector<int32_t> &order, int64_t count, uint64_t seed, int64_t epoch) {
  order.resize(size_t(count));
  std::iota(order.begin(), order.end(), 0);
  const uint64_t key = fnv1a64("shuffle");
  for (int64_t i = count - 1; i > 0; --i) {
    // j uniform in [0, i]: the high word of 64 random bits times i + 1.
    PhiloxCounter draw = philoxBlock(seed, key, uint64_t(epoch) << 32 | uint64_t(i));
    uint64_t bits = uint64_t(draw[1]) << 32 | draw[0];
    int64_t j = int64_t((unsigned __int128)bits * uint64_t(i + 1) >> 64);
    std::swap(order[size_t(i)], order[size_t(j)]);
  }
}

namespace {

/// n elements of `type` from `source` into an f32 input: value * scale, rounded once.
template <typename T> void toFloats(const uint8_t *source, float *out, int64_t n, double scale) {
  for (int64_t j = 0; j < n; ++j)
    out[j] = float(double(elementAt<T>(source, j)) * scale);
}

void convertRun(const BoundInput &bound, DType dtype, const uint8_t *source, void *out, int64_t n) {
  const ElementType type = bound.array.type;
  if (dtype == DType::I32) {
    int32_t *ints = static_cast<int32_t *>(out);
    if (type == ElementType::I32) {
      std::memcpy(ints, source, size_t(n) * 4);
      return;
    }
    for (int64_t j = 0; j < n; ++j) // checked to fit when loaded
      ints[j] = int32_t(integerAt(type, source, j));
    return;
  }
  float *floats = static_cast<float *>(out);
  switch (type) {
  case ElementType::U8:
    return toFloats<uint8_t>(source, floats, n, bound.scale);
  case ElementType::U16:
    return toFloats<uint16_t>(source, floats, n, bound.scale);
  case ElementType::U32:
    return toFloats<uint32_t>(source, floats, n, bound.scale);
  case ElementType::I32:
    return toFloats<int32_t>(source, floats, n, bound.scale);
  case ElementType::I64:
    return toFloats<int64_t>(source, floats, n, bound.scale);
  case ElementType::F32:
    return toFloats<float>(source, floats, n, bound.scale);
  case ElementType::F64:
    return toFloats<double>(source, floats, n, bound.scale);
  }
}

} // namespace

void fillBatch(const std::vector<Block> &blocks, const DataSplit &split, const DataArrays &arrays,
               const int32_t *examples, int64_t real) {
  for (const BoundInput &bound : split.inputs) {
    const Block &block = blocks[bound.input];
    const TensorSpec &spec = *block.spec;
    const uint8_t *base = arrays.find(bound.arrayKey);
    const size_t elementSize = data::elementSize(bound.array.type);
    // A run may span several examples (an unsplit image block is one run): cut it at
    // example boundaries.
    const int64_t exampleSize = bound.exampleSize;
    forEachRow(spec.shape, block.local, block.offset,
               [&](int64_t localStart, int64_t globalStart, int64_t length) {
                 for (int64_t done = 0; done < length;) {
                   const int64_t at = globalStart + done, row = at / exampleSize;
                   const int64_t within = at % exampleSize;
                   const int64_t n = std::min(length - done, exampleSize - within);
                   uint8_t *out = static_cast<uint8_t *>(block.data()) + (localStart + done) * 4;
                   if (row < real)
                     convertRun(
                         bound, spec.dtype,
                         base + size_t(exampleStart(bound, exampleSize, examples[row]) + within) *
                                    elementSize,
                         out, n);
                   else
                     std::memset(out, 0, size_t(n) * 4);
                   done += n;
                 }
               });
  }
}

TrainBatches::TrainBatches(const DataPlan &plan, const DataArrays &arrays,
                           const std::vector<Block> &inputs, const Placement &place, uint64_t seed,
                           int64_t stepsPerEpoch, int64_t lastStep, bool prefetch)
    : plan_(plan), arrays_(arrays), inputs_(inputs), seed_(seed), stepsPerEpoch_(stepsPerEpoch),
      lastStep_(lastStep) {
  if (!prefetch)
    return;
  staged_.resize(inputs.size());
  for (const BoundInput &bound : plan.train.inputs)
    staged_[bound.input] = allocateBlock(*inputs[bound.input].spec, place);
  thread_ = std::thread([this] { work(); });
}

TrainBatches::~TrainBatches() {
  if (!thread_.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void TrainBatches::fill(int64_t step, const std::vector<Block> &blocks) {
  const int64_t epoch = (step - 1) / stepsPerEpoch_ + 1, inEpoch = (step - 1) % stepsPerEpoch_;
  if (epoch != orderEpoch_) {
    shuffle(order_, plan_.train.examples, seed_, epoch);
    orderEpoch_ = epoch;
  }
  fillBatch(blocks, plan_.train, arrays_, order_.data() + inEpoch * plan_.batch, plan_.batch);
}

void TrainBatches::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || wanted_ != ready_; });
    if (stopping_)
      return;
    const int64_t step = wanted_;
    lock.unlock();
    fill(step, staged_);
    lock.lock();
    ready_ = step;
    changed_.notify_all();
  }
}

void TrainBatches::load(int64_t step) {
  if (!thread_.joinable()) {
    fill(step, inputs_);
    return;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  if (wanted_ != step) { // the first step, or one after a resume: nothing staged yet
    wanted_ = step;
    changed_.notify_all();
  }
  const auto start = std::chrono::steady_clock::now();
  changed_.wait(lock, [&] { return ready_ == step; });
  waited_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const BoundInput &bound : plan_.train.inputs) {
    const Block &from = staged_[bound.input], &to = inputs_[bound.input];
    std::memcpy(to.data(), from.data(), size_t(to.count()) * 4);
  }
  if (step < lastStep_) {
    wanted_ = step + 1;
    changed_.notify_all();
  }
}

} // namespace shardrt
