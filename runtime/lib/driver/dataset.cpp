// Reading Fashion-MNIST's IDX files through zlib's gz* interface.
//
// IDX (LeCun's MNIST format) is a big-endian header, the magic number 0x0000080N
// (unsigned bytes, N dimensions) and N uint32 sizes, then the elements row-major. The
// files are small (47 MB of pixels in all) and held whole. Every way a file can be
// wrong ends in one DatasetError that names it: zlib reports a corrupt stream or a bad
// checksum when the read reaches it, and a stream that ends early reads short.
#include "dataset.h"

#include <zlib.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace shardrt {
namespace {

/// A gzip file read from start to end; each failure throws with the file's path.
class GzipReader {
public:
  explicit GzipReader(const std::string &path) : path_(path) {
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (!file_)
      fail(std::string("cannot open it: ") + (errno ? std::strerror(errno) : "out of memory"));
  }
  ~GzipReader() { gzclose(file_); }
  GzipReader(const GzipReader &) = delete;
  GzipReader &operator=(const GzipReader &) = delete;

  [[noreturn]] void fail(const std::string &what) const {
    throw DatasetError("'" + path_ + "': " + what);
  }

  /// Appends up to `count` bytes to `out` and returns how many it read: fewer only at
  /// the end of the stream. Reads in chunks, so that a header announcing more than the
  /// file holds fails without allocating it all.
  size_t read(size_t count, std::vector<uint8_t> &out) {
    size_t done = 0;
    while (done < count) {
      const size_t start = out.size(), chunk = std::min<size_t>(count - done, 1 << 20);
      out.resize(start + chunk);
      int got = gzread(file_, out.data() + start, static_cast<unsigned>(chunk));
      int status = Z_OK;
      const char *message = gzerror(file_, &status);
      if (got < 0 || (status != Z_OK && status != Z_STREAM_END)) {
        // zlib's message starts with the path, which fail() gives already.
        std::string what = message;
        if (what.rfind(path_ + ": ", 0) == 0)
          what = what.substr(path_.size() + 2);
        fail("corrupt or truncated gzip data: " + what);
      }
      out.resize(start + size_t(got));
      done += size_t(got);
      if (size_t(got) < chunk)
        break;
    }
    return done;
  }

  /// The next big-endian uint32 of the header.
  uint32_t readWord() {
    std::vector<uint8_t> bytes;
    if (read(4, bytes) < 4)
      fail("truncated: the file ends inside its IDX header");
    return uint32_t(bytes[0]) << 24 | uint32_t(bytes[1]) << 16 | uint32_t(bytes[2]) << 8 | bytes[3];
  }

private:
  std::string path_;
  gzFile file_ = nullptr;
};

/// An IDX file of unsigned bytes with `ndim` dimensions: returns its elements and puts
/// its sizes in `dims`. `kind` names an element in messages ("image", "label").
std::vector<uint8_t> readIdx(const std::string &path, uint32_t ndim, const char *kind,
                             std::vector<uint32_t> &dims) {
  GzipReader file(path);
  const uint32_t magic = file.readWord(), expected = 0x800u | ndim;
  if (magic != expected) {
    char text[120];
    std::snprintf(text, sizeof text,
                  "not an IDX file of %ss: its magic number is 0x%08x, not 0x%08x", kind, magic,
                  expected);
    file.fail(text);
  }
  dims.clear();
  uint64_t count = 1;
  for (uint32_t d = 0; d < ndim; ++d) {
    dims.push_back(file.readWord());
    count *= dims.back();
  }
  if (dims[0] == 0)
    file.fail(std::string("holds no ") + kind + "s");
  std::vector<uint8_t> elements;
  const size_t got = file.read(count, elements);
  if (got < count)
    file.fail("truncated: " + std::to_string(dims[0]) + " " + kind + "s need " +
              std::to_string(count) + " bytes, but it holds " + std::to_string(got));
  std::vector<uint8_t> extra;
  if (file.read(1, extra) != 0)
    file.fail("more data follows its " + std::to_string(dims[0]) + " " + kind + "s");
  return elements;
}

Dataset readSplit(const std::string &folder, const std::string &prefix) {
  const std::string imagesPath = folder + "/" + prefix + "-images-idx3-ubyte.gz";
  const std::string labelsPath = folder + "/" + prefix + "-labels-idx1-ubyte.gz";
  Dataset set;
  std::vector<uint32_t> imageDims, labelDims;
  set.pixels = readIdx(imagesPath, 3, "image", imageDims);
  if (imageDims[1] != kImageRows || imageDims[2] != kImageCols)
    throw DatasetError("'" + imagesPath + "': its images are " + std::to_string(imageDims[1]) +
                       "x" + std::to_string(imageDims[2]) + " pixels, not 28x28");
  set.labels = readIdx(labelsPath, 1, "label", labelDims);
  if (labelDims[0] != imageDims[0])
    throw DatasetError("'" + labelsPath + "' has " + std::to_string(labelDims[0]) +
                       " labels, but '" + imagesPath + "' has " + std::to_string(imageDims[0]) +
                       " images");
  for (size_t i = 0; i < set.labels.size(); ++i)
    if (set.labels[i] >= kNumClasses)
      throw DatasetError("'" + labelsPath + "': label " + std::to_string(set.labels[i]) +
                         " of example " + std::to_string(i) + " is not a class 0..9");
  set.count = imageDims[0];
  return set;
}

} // namespace

FashionMnist readFashionMnist(const std::string &folder) {
  struct stat info;
  if (stat(folder.c_str(), &info) != 0)
    throw DatasetError("cannot read the folder '" + folder + "': " + std::strerror(errno));
  if (!S_ISDIR(info.st_mode))
    throw DatasetError("'" + folder + "' is not a folder");
  return {readSplit(folder, "train"), readSplit(folder, "t10k")};
}

} // namespace shardrt
