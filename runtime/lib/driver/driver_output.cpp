// Gathering results to rank 0 and writing them as JSON.
//
// Rank 0 receives one block at a time from the ranks that hold a first copy (replicas
// would only repeat it), so it needs the whole tensor plus one block, never a copy per
// rank. Statistics are summed in double in row-major order over the whole tensor, so
// the same numbers give the same statistics whatever the mesh.
#include "driver_output.h"
#include "driver_json.h"
#include "mesh/mesh.h"

#include "collectives/watchdog.h"
#include "shardrt/shardrt.h"

#include <cerrno>
#include <cmath>
#include <cstring>

namespace shardrt {
namespace {

/// Both dtypes are 4 bytes; the MPI type still says which, for MPI's sake.
MPI_Datatype mpiType(DType dtype) { return dtype == DType::F32 ? MPI_FLOAT : MPI_INT32_T; }

void place(const TensorSpec &spec, const Shape &meshSizes, const Shape &coords,
           const uint32_t *block, uint32_t *whole) {
  forEachRow(spec.shape, localShape(spec, meshSizes), blockOffset(spec, meshSizes, coords),
             [&](int64_t localStart, int64_t globalStart, int64_t length) {
               std::memcpy(whole + globalStart, block + localStart, length * sizeof(uint32_t));
             });
}

/// FNV-1a, 64 bits, of the raw bytes.
uint64_t digest(const std::vector<uint32_t> &elements) {
  uint64_t hash = 0xcbf29ce484222325ull;
  const unsigned char *bytes = reinterpret_cast<const unsigned char *>(elements.data());
  for (size_t i = 0; i < elements.size() * sizeof(uint32_t); ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string describeResult(const GatheredResult &result, int64_t numValues) {
  const TensorSpec &spec = *result.spec;
  const bool isFloat = spec.dtype == DType::F32;
  double sum = 0, absSum = 0, squares = 0;
  std::string values;
  for (size_t i = 0; i < result.elements.size(); ++i) {
    double value;
    if (isFloat) {
      float f;
      std::memcpy(&f, &result.elements[i], sizeof f);
      value = f;
    } else {
      value = int32_t(result.elements[i]);
    }
    sum += value;
    absSum += std::fabs(value);
    squares += value * value;
    if (int64_t(i) < numValues)
      // %.9g round-trips an f32; an i32 prints exactly as %.0f.
      values += (i ? ", " : "") + jsonNumber(value, isFloat ? "%.9g" : "%.0f");
  }
  std::string shape;
  for (size_t d = 0; d < spec.shape.size(); ++d)
    shape += (d ? ", " : "") + std::to_string(spec.shape[d]);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(digest(result.elements)));
  // The sums are doubles: %.17g round-trips them.
  return "{\"dtype\": \"" + std::string(dtypeName(spec.dtype)) + "\", \"shape\": [" + shape +
         "], \"sum\": " + jsonNumber(sum, "%.17g") +
         ", \"abs_sum\": " + jsonNumber(absSum, "%.17g") +
         ", \"l2\": " + jsonNumber(std::sqrt(squares), "%.17g") + ", \"values\": [" + values +
         "], \"digest\": \"" + hex + "\"}";
}

} // namespace

GatheredResult gatherResult(const TensorSpec &spec, const Shape &meshSizes, const void *block,
                            int tag) {
  GatheredResult result{&spec, {}};
  const int rank = shardrt_rank(), numRanks = shardrt_num_ranks();
  const int count = static_cast<int>(numElements(localShape(spec, meshSizes)));
  arrive("gather to rank 0", 0, /*world=*/true);
  if (rank != 0) {
    if (holdsFirstCopy(spec, rankCoords(rank, meshSizes))) {
      MPI_Request request;
      MPI_Isend(block, count, mpiType(spec.dtype), 0, tag, MPI_COMM_WORLD, &request);
      await(1, &request);
    }
    return result;
  }
  result.elements.resize(numElements(spec.shape));
  place(spec, meshSizes, rankCoords(0, meshSizes), static_cast<const uint32_t *>(block),
        result.elements.data());
  std::vector<uint32_t> received(count);
  for (int source = 1; source < numRanks; ++source) {
    Shape coords = rankCoords(source, meshSizes);
    if (!holdsFirstCopy(spec, coords))
      continue;
    MPI_Request request;
    MPI_Irecv(received.data(), count, mpiType(spec.dtype), source, tag, MPI_COMM_WORLD, &request);
    await(1, &request);
    place(spec, meshSizes, coords, received.data(), result.elements.data());
  }
  return result;
}

std::string meshJson(const Manifest &manifest) {
  JsonObject mesh;
  for (size_t a = 0; a < manifest.axisNames.size(); ++a)
    mesh.add(manifest.axisNames[a], std::to_string(manifest.axisSizes[a]));
  return mesh.str();
}

void writeResults(std::FILE *out, const Manifest &manifest, uint64_t seed, int64_t numValues,
                  const std::vector<GatheredResult> &results) {
  std::string text = "{\n  \"model\": " + jsonString(manifest.model) +
                     ",\n  \"mesh\": " + meshJson(manifest) +
                     ",\n  \"seed\": " + std::to_string(seed) + ",\n  \"results\": {";
  for (size_t i = 0; i < results.size(); ++i)
    text += std::string(i ? "," : "") + "\n    " + jsonString(results[i].spec->name) + ": " +
            describeResult(results[i], numValues);
  text += results.empty() ? "}\n}\n" : "\n  }\n}\n";
  std::fwrite(text.data(), 1, text.size(), out);
}

std::FILE *openOnRank0(const std::string &path, std::FILE *fallback, int rank, bool &ok,
                       const char *mode) {
  std::FILE *file = nullptr;
  bool opened = true;
  if (rank == 0) {
    file = path.empty() ? fallback : std::fopen(path.c_str(), mode);
    if (!file && !path.empty()) {
      std::fprintf(stderr, "shardrt: error: cannot write '%s': %s\n", path.c_str(),
                   std::strerror(errno));
      opened = false;
    }
  }
  ok = rank0Verdict(opened);
  return file;
}

bool closeOnRank0(std::FILE *file, const std::string &path) {
  if (!file)
    return true;
  bool failed = std::ferror(file) != 0;
  failed = (file == stdout ? std::fflush(file) : std::fclose(file)) != 0 || failed;
  if (failed)
    std::fprintf(stderr, "shardrt: error: cannot write %s\n",
                 path.empty() ? "to stdout" : ("'" + path + "'").c_str());
  return !failed;
}

} // namespace shardrt
