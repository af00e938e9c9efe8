// What the readers of array_file.h share: files opened and read with every check, shapes
// whose byte counts are checked before anything trusts them, the .npy header (also the
// start of every .npz member), and the wording of their errors.
#ifndef SHARDRT_LIB_DATA_READING_H
#define SHARDRT_LIB_DATA_READING_H

#include "array_file.h"

#include <functional>

namespace shardrt::data {

/// "'path'": how messages name a file or folder.
std::string quoted(const std::string &path);

/// Throws DataError("WHAT: PROBLEM"); `what` names the file as ArrayPlan::what does.
[[noreturn]] void fail(const std::string &what, const std::string &problem);

std::string systemError();

/// "[60000, 28, 28]".
std::string shapeText(const std::vector<int64_t> &shape);

/// "600 float32 elements (2400 bytes)": what a header announces.
std::string elementsText(const ArrayPlan &plan);

/// Checks the shape a header announces: at least one dimension, no size 0 (a dataset
/// without examples or an example without elements is a mistake), and an element and
/// byte count that fit 63 bits, so that count() and bytes() never overflow. Fails naming
/// plan.what.
void checkShape(const ArrayPlan &plan);

/// Fails unless `held`, the bytes that follow a header, are exactly plan.bytes(): a
/// header that announces more than is there is a truncated file, one that announces less
/// leaves bytes nobody explains.
void checkHeld(const ArrayPlan &plan, uint64_t held);

/// Deflate's largest expansion (zlib's documentation: 1032:1), so that a compressed
/// file whose header announces more than it can inflate to fails before anything is
/// allocated for it.
constexpr uint64_t kMaxDeflateRatio = 1032;

/// A regular file open for reading, closed when it goes out of scope; each failure throws
/// DataError with its path.
class InputFile {
public:
  explicit InputFile(const std::string &path);
  ~InputFile();
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;

  uint64_t size() const { return size_; }
  /// Reads up to `count` bytes at `offset`; returns how many, fewer only at the end.
  uint64_t readAt(uint64_t offset, void *out, uint64_t count) const;
  /// Up to `count` bytes at `offset`, for headers and other small regions.
  std::string read(uint64_t offset, uint64_t count) const;

private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

/// Reads the next bytes of a stream (a file, a zip member, a gzip stream) into `out`:
/// returns how many, fewer than `count` only at its end; throws DataError on a read
/// error.
using ReadNext = std::function<uint64_t(void *out, uint64_t count)>;

/// In a produce, which reads a header again: fails unless it announces what it did
/// when the file was opened.
void checkUnchanged(const ArrayPlan &opened, const ArrayPlan &now);

/// Reads plan.bytes() bytes of elements from `read` into `out`, and checks that the
/// stream ends there (checkHeld's messages).
void readElements(const ArrayPlan &plan, const ReadNext &read, uint8_t *out);

/// Reads a .npy header (magic, version, length, dict) from the start of `read`: sets
/// plan.type and plan.shape (checked as checkShape does) and returns the header's length
/// in bytes, where the data starts. Fails naming plan.what.
uint64_t readNpyHeader(ArrayPlan &plan, const ReadNext &read);

} // namespace shardrt::data

#endif // SHARDRT_LIB_DATA_READING_H
