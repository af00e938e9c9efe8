// What rank 0 writes: the files it opens for every rank's sake, and the results of a
// --forward run, gathered to it, summarised and written as JSON.
#ifndef SHARDRT_LIB_DRIVER_OUTPUT_H
#define SHARDRT_LIB_DRIVER_OUTPUT_H

#include "driver_layout.h"
#include "driver_manifest.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace shardrt {

/// A result assembled on rank 0: the whole tensor, row-major, as raw 4-byte elements.
struct GatheredResult {
  const TensorSpec *spec;
  std::vector<uint32_t> elements;
};

/// Every rank calls this with its block of `spec` (in manifest order, one result after
/// the other). The first copy of each block goes to rank 0, which places it at its
/// rank's offset; rank 0 gets the whole tensor, other ranks an empty one.
GatheredResult gatherResult(const TensorSpec &spec, const Shape &meshSizes, const void *block,
                            int tag);

/// Writes the results JSON (runtime/README.md) on rank 0.
void writeResults(std::FILE *out, const Manifest &manifest, uint64_t seed, int64_t numValues,
                  const std::vector<GatheredResult> &results);

/// The mesh as a JSON object: {"data": 2, "model": 4}.
std::string meshJson(const Manifest &manifest);

/// Rank 0 opens `path` for writing (`fallback` when the path is empty; `mode` "a"
/// appends), so that a bad path fails before the run; every rank learns whether it
/// could, so all leave together. Returns the file on rank 0, nullptr elsewhere.
std::FILE *openOnRank0(const std::string &path, std::FILE *fallback, int rank, bool &ok,
                       const char *mode = "w");

/// Flushes and closes what openOnRank0 opened (stdout is only flushed); false, after
/// an error message, when something could not be written.
bool closeOnRank0(std::FILE *file, const std::string &path);

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_OUTPUT_H
