// One checkpoint file: the safetensors layout (an 8-byte little-endian header length,
// a JSON header of names, dtypes, shapes and data offsets, then the raw little-endian
// tensors), written so that a kill at any moment leaves the previous file whole, and
// read back with every offset, size and checksum checked. Nothing here knows about
// meshes or training: the driver (driver_checkpoint.cpp) decides what goes in.
#ifndef SHARDRT_LIB_CHECKPOINT_FILE_H
#define SHARDRT_LIB_CHECKPOINT_FILE_H

#include "driver_layout.h"
#include "driver_manifest.h"

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace shardrt {

/// A checkpoint that cannot be written or read; what() starts with the file's path and
/// says what is wrong ("'ckpt/ckpt-40.safetensors': truncated: ...").
struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A whole tensor to write: row-major, 4-byte elements.
struct TensorToWrite {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  const void *data = nullptr;
};

/// A tensor as the header describes it: bytes [begin, end) of the data section.
struct StoredTensor {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  uint64_t begin = 0, end = 0;
  uint32_t crc32 = 0;
};

/// Writes `tensors` (in this order, names unique) and `metadata` (the header's
/// `__metadata__`, strings only as safetensors wants) to `path`: first to a temporary
/// name in the same folder (`.NAME.tmp-PID`), then fsync, rename over `path`, fsync of
/// the folder. Each tensor's CRC-32 goes into the metadata key "crc32" (a JSON object,
/// name -> 8 hex digits), which `metadata` must not have. Throws CheckpointError; the
/// temporary file is removed on failure and `path`, if it existed, is untouched (but
/// for the last step: when only the folder's fsync fails, `path` is the new file).
void writeCheckpointFile(const std::string &path, const std::vector<TensorToWrite> &tensors,
                         const std::map<std::string, std::string> &metadata);

/// A checkpoint file opened for reading. The constructor reads and checks the header:
/// the length fits the file, the header is a JSON object, each tensor has a known dtype
/// (F32, I32), a shape whose byte size matches its offsets, offsets that tile the data
/// section in order without gaps or overlap, a checksum in "crc32"; the file ends where
/// the data does. Throws CheckpointError naming the file and the problem.
class CheckpointReader {
public:
  explicit CheckpointReader(std::string path);

  const std::string &path() const { return path_; }
  /// `__metadata__` without the "crc32" key.
  const std::map<std::string, std::string> &metadata() const { return metadata_; }
  /// In file order.
  const std::vector<StoredTensor> &tensors() const { return tensors_; }
  /// nullptr when there is none of that name.
  const StoredTensor *find(const std::string &name) const;
  /// The tensor's elements, its checksum verified (CheckpointError if it differs). Opens
  /// the file again and reads only this tensor's bytes.
  std::vector<uint32_t> read(const StoredTensor &tensor) const;

private:
  std::string path_;
  uint64_t dataStart_ = 0;
  std::map<std::string, std::string> metadata_;
  std::vector<StoredTensor> tensors_;
};

/// The files `PREFIX-STEP.safetensors` in `folder` (STEP a decimal number as
/// std::to_string writes it: no sign, no leading zeros), by step, oldest first, as
/// (STEP, folder/name); temporary files and other names are ignored. A missing folder
/// is an empty list; one that cannot be read throws CheckpointError.
std::vector<std::pair<int64_t, std::string>> listCheckpoints(const std::string &folder,
                                                             const std::string &prefix);

/// Deletes all but the `keep` (>= 0) newest of listCheckpoints(folder, prefix), and
/// the temporaries of steps up to the newest, which writers killed mid-write left.
void pruneCheckpoints(const std::string &folder, const std::string &prefix, int64_t keep);

} // namespace shardrt

#endif // SHARDRT_LIB_CHECKPOINT_FILE_H
