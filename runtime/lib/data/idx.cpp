// IDX files (LeCun's MNIST format), gzip-compressed or not:
//
//   4 bytes    the magic number: 0, 0, the element type code, the number of dimensions N
//   4N bytes   the sizes, big-endian uint32
//   the rest   the elements row-major, big-endian
//
// Read through zlib's gz* interface, which reads a file that is not gzip as it is. A
// plain file of bytes is mapped where its elements lie; anything else, inflated or
// byte-swapped, is produced. zlib reports a corrupt stream or a bad checksum when the
// read reaches it, and a stream that ends early reads short.
#include "reading.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace shardrt::data {
namespace {

/// A gzip file (or a plain one, read as it is) read from start to end; each failure
/// throws naming `what`.
class GzipReader {
public:
  GzipReader(const std::string &path, const std::string &what) : path_(path), what_(what) {
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (!file_)
      fail(what_, std::string("cannot open it: ") + (errno ? systemError() : "out of memory"));
  }
  ~GzipReader() { gzclose(file_); }
  GzipReader(const GzipReader &) = delete;
  GzipReader &operator=(const GzipReader &) = delete;

  /// Up to `count` bytes; fewer only at the end of the stream.
  uint64_t read(void *out, uint64_t count) {
    uint8_t *bytes = static_cast<uint8_t *>(out);
    uint64_t done = 0;
    while (done < count) {
      const unsigned chunk = unsigned(std::min<uint64_t>(count - done, 1 << 30));
      const int got = gzread(file_, bytes + done, chunk);
      int status = Z_OK;
      const char *message = gzerror(file_, &status);
      if (got < 0 || (status != Z_OK && status != Z_STREAM_END)) {
        // zlib's message starts with the path, which what_ gives already.
        std::string text = message;
        if (text.rfind(path_ + ": ", 0) == 0)
          text = text.substr(path_.size() + 2);
        fail(what_, "corrupt or truncated gzip data: " + text);
      }
      done += uint64_t(got);
      if (unsigned(got) < chunk)
        break;
    }
    return done;
  }

  ReadNext reader() {
    return [this](void *out, uint64_t count) { return read(out, count); };
  }

private:
  std::string path_, what_;
  gzFile file_ = nullptr;
};

std::string hex(unsigned value, int digits) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%0*x", digits, value);
  return text;
}

/// Reads the magic number and sizes: sets plan.type and plan.shape (checked) and returns
/// the header's length.
uint64_t readIdxHeader(ArrayPlan &plan, const ReadNext &read) {
  uint8_t magic[4];
  const uint64_t got = read(magic, 4);
  if ((got >= 1 && magic[0] != 0) || (got >= 2 && magic[1] != 0))
    fail(plan.what, "not an IDX file: it does not start with two zero bytes");
  if (got < 4)
    fail(plan.what, "truncated: it ends inside its IDX header");
  const std::string code = "element type code " + hex(magic[2], 2);
  switch (magic[2]) {
  case 0x08:
    plan.type = ElementType::U8;
    break;
  case 0x0C:
    plan.type = ElementType::I32;
    break;
  case 0x0D:
    plan.type = ElementType::F32;
    break;
  case 0x0E:
    plan.type = ElementType::F64;
    break;
  case 0x09:
  case 0x0B:
    fail(plan.what, code + (magic[2] == 0x09 ? " (int8)" : " (int16)") +
                        " is not supported; accepted: 0x08 (uint8), 0x0c (int32), "
                        "0x0d (float32), 0x0e (float64)");
  default:
    fail(plan.what, "not an IDX file: unknown " + code + " in its magic number " +
                        hex(uint32_t(magic[2]) << 8 | magic[3], 8));
  }
  const uint64_t ndim = magic[3];
  uint8_t sizes[4 * 255];
  if (read(sizes, 4 * ndim) < 4 * ndim)
    fail(plan.what, "truncated: it ends inside its IDX header");
  for (uint64_t d = 0; d < ndim; ++d) {
    const uint8_t *size = sizes + 4 * d;
    plan.shape.push_back(int64_t(uint32_t(size[0]) << 24 | uint32_t(size[1]) << 16 |
                                 uint32_t(size[2]) << 8 | size[3]));
  }
  checkShape(plan);
  return 4 + 4 * ndim;
}

/// Big-endian elements to little-endian, in place.
void swapBytes(uint8_t *bytes, uint64_t count, size_t size) {
  for (uint64_t i = 0; size > 1 && i < count; ++i, bytes += size)
    std::reverse(bytes, bytes + size);
}

} // namespace

ArrayPlan openIdx(const std::string &path) {
  ArrayPlan plan;
  plan.what = quoted(path);
  const InputFile file(path);
  const bool gzip = file.read(0, 2) == "\x1f\x8b";
  GzipReader stream(path, plan.what);
  const uint64_t headerBytes = readIdxHeader(plan, stream.reader());
  if (!gzip) {
    checkHeld(plan, file.size() - headerBytes);
    if (plan.type == ElementType::U8) {
      plan.path = path;
      plan.offset = headerBytes;
      return plan;
    }
  } else if (plan.bytes() / kMaxDeflateRatio > file.size()) {
    // Checked here because the caller allocates what the header announces.
    fail(plan.what, "truncated: its header announces " + elementsText(plan) +
                        ", more than a gzip file of " + std::to_string(file.size()) +
                        " bytes can hold");
  }
  plan.produce = [path, expected = plan](uint8_t *out) {
    GzipReader stream(path, expected.what);
    ArrayPlan again;
    again.what = expected.what;
    readIdxHeader(again, stream.reader());
    checkUnchanged(expected, again);
    readElements(expected, stream.reader(), out);
    swapBytes(out, uint64_t(expected.count()), elementSize(expected.type));
  };
  return plan;
}

} // namespace shardrt::data
