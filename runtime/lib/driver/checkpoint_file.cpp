// Checkpoint files in the safetensors layout (huggingface/safetensors, "Format"):
//
//   8 bytes    N, the header's length, a little-endian u64
//   N bytes    a JSON object: per tensor {"dtype", "shape", "data_offsets": [begin, end]},
//              offsets relative to the data section, and "__metadata__" (strings only);
//              padded with spaces to a multiple of 8 so that the data is aligned
//   the rest   the data section: the tensors' raw little-endian bytes, back to back
//
// Safetensors has no checksums, so each tensor's CRC-32 rides in the metadata as a JSON
// string. A file is read by people's tools too, and may be cut short by a full disk or
// be some other file altogether: every length and offset is checked against the file's
// size before anything is allocated, and every problem ends in one CheckpointError that
// names the file.
#include "checkpoint_file.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the data section is little-endian, and tensors are written as they are in memory");

namespace shardrt {
namespace {

using nlohmann::json;

constexpr uint64_t kLengthBytes = 8;
/// The safetensors library refuses longer headers; ours are a few kilobytes.
constexpr uint64_t kMaxHeaderBytes = 100000000;
constexpr const char *kMetadataKey = "__metadata__";
constexpr const char *kChecksumsKey = "crc32";
constexpr const char *kSuffix = ".safetensors";

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw CheckpointError("'" + path + "': " + what);
}

std::string systemError() { return std::strerror(errno); }

uint32_t checksum(const void *data, uint64_t bytes) {
  return uint32_t(crc32_z(crc32_z(0, nullptr, 0), static_cast<const Bytef *>(data), bytes));
}

std::string hex8(uint32_t value) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", value);
  return text;
}

/// "an array", "a string", ...: what a JSON value is, for messages.
std::string jsonKind(const json &value) {
  switch (value.type()) {
  case json::value_t::object:
    return "an object";
  case json::value_t::array:
    return "an array";
  case json::value_t::string:
    return "a string";
  case json::value_t::boolean:
    return "a boolean";
  case json::value_t::null:
    return "null";
  case json::value_t::number_integer:
  case json::value_t::number_unsigned:
  case json::value_t::number_float:
    return "a number";
  default:
    return "not JSON data";
  }
}

/// A file open for reading, closed when it goes out of scope; each failure throws with
/// its path.
class InputFile {
public:
  /// O_NONBLOCK so that a FIFO given by mistake fails at the type check instead of
  /// waiting for a writer.
  explicit InputFile(const std::string &path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0)
      fail(path_, errno == ENOENT ? "no such file" : "cannot open it: " + systemError());
    struct stat info;
    if (::fstat(fd_, &info) != 0)
      fail(path_, "cannot read it: " + systemError());
    if (S_ISDIR(info.st_mode))
      fail(path_, "not a checkpoint: it is a folder");
    if (!S_ISREG(info.st_mode))
      fail(path_, "not a checkpoint: it is not a regular file");
    size_ = uint64_t(info.st_size);
  }
  ~InputFile() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;

  uint64_t size() const { return size_; }

  /// Reads `count` bytes at `offset`; false when the file ends first.
  bool readAt(uint64_t offset, void *out, uint64_t count) const {
    char *bytes = static_cast<char *>(out);
    while (count > 0) {
      const ssize_t got = ::pread(fd_, bytes, std::min<uint64_t>(count, 1 << 30), off_t(offset));
      if (got < 0 && errno == EINTR)
        continue;
      if (got < 0)
        fail(path_, "cannot read it: " + systemError());
      if (got == 0)
        return false;
      bytes += got;
      offset += uint64_t(got);
      count -= uint64_t(got);
    }
    return true;
  }

private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

/// The file that becomes `target`: created next to it (rename does not cross file
/// systems), and deleted by the destructor unless commit() renamed it.
class TemporaryFile {
public:
  explicit TemporaryFile(const std::string &target) : target_(target) {
    const size_t slash = target.rfind('/');
    const std::string folderPrefix = slash == std::string::npos ? "" : target.substr(0, slash + 1);
    folder_ = slash == std::string::npos ? "." : slash == 0 ? "/" : target.substr(0, slash);
    path_ = folderPrefix + "." + target.substr(folderPrefix.size()) + ".tmp-" +
            std::to_string(::getpid());
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0)
      fail(target_, "cannot create the temporary file '" + path_ + "': " + systemError());
  }
  ~TemporaryFile() {
    if (fd_ >= 0)
      ::close(fd_);
    if (!renamed_)
      ::unlink(path_.c_str());
  }
  TemporaryFile(const TemporaryFile &) = delete;
  TemporaryFile &operator=(const TemporaryFile &) = delete;

  void write(const void *data, uint64_t count) {
    const char *bytes = static_cast<const char *>(data);
    while (count > 0) {
      const ssize_t done = ::write(fd_, bytes, std::min<uint64_t>(count, 1 << 30));
      if (done < 0 && errno == EINTR)
        continue;
      if (done < 0)
        fail(target_, "cannot write the temporary file '" + path_ + "': " + systemError());
      bytes += done;
      count -= uint64_t(done);
    }
  }

  /// Makes the bytes durable, then puts them in place in one step: a reader, or a run
  /// killed at any moment, sees the old file or the new one, never a mix.
  void commit() {
    if (::fsync(fd_) != 0)
      fail(target_, "cannot sync the temporary file '" + path_ + "': " + systemError());
    const int status = ::close(fd_);
    fd_ = -1;
    if (status != 0)
      fail(target_, "cannot write the temporary file '" + path_ + "': " + systemError());
    if (::rename(path_.c_str(), target_.c_str()) != 0)
      fail(target_, "cannot rename the temporary file '" + path_ + "' to it: " + systemError());
    renamed_ = true;
    // The rename itself is durable only once the folder is.
    const int folder = ::open(folder_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const bool synced = folder >= 0 && ::fsync(folder) == 0;
    const std::string error = systemError();
    if (folder >= 0)
      ::close(folder);
    if (!synced)
      fail(target_, "written, but its folder '" + folder_ + "' cannot be synced: " + error);
  }

private:
  std::string target_, folder_, path_;
  int fd_ = -1;
  bool renamed_ = false;
};

/// A JSON integer in [0, limit], or fails with `what`.
uint64_t readCount(const std::string &path, const std::string &what, const json &value,
                   uint64_t limit) {
  // The parser keeps non-negative integers as unsigned; negative ones, fractions and
  // integers beyond 64 bits are other types.
  if (!value.is_number_unsigned() || value.get<uint64_t>() > limit)
    fail(path,
         what + " " + value.dump() + " is not an integer in [0, " + std::to_string(limit) + "]");
  return value.get<uint64_t>();
}

/// The checksums stored in the metadata's "crc32" string, by tensor name.
std::map<std::string, uint32_t> readChecksums(const std::string &path, const std::string &text) {
  const std::string where = std::string(kMetadataKey) + " '" + kChecksumsKey + "'";
  json object = json::parse(text, nullptr, false);
  if (!object.is_object())
    fail(path, where + " is not a JSON object of checksums");
  std::map<std::string, uint32_t> checksums;
  for (const auto &item : object.items()) {
    const json &value = item.value();
    const std::string *digits = value.is_string() ? &value.get_ref<const std::string &>() : nullptr;
    if (!digits || digits->size() != 8 ||
        digits->find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
      fail(path, where + ": the checksum of '" + item.key() + "' is " + value.dump() +
                     ", not 8 hex digits");
    checksums[item.key()] = uint32_t(std::stoul(*digits, nullptr, 16));
  }
  return checksums;
}

/// One tensor's entry of the header, checked: dtype, shape, offsets that hold exactly
/// the shape's bytes, and a checksum.
StoredTensor readTensorEntry(const std::string &path, const std::string &name, const json &entry,
                             const std::map<std::string, uint32_t> &checksums) {
  const std::string where = "tensor '" + name + "'";
  if (!entry.is_object())
    fail(path, where + ": its entry is " + jsonKind(entry) + ", not an object");
  for (const auto &item : entry.items())
    if (item.key() != "dtype" && item.key() != "shape" && item.key() != "data_offsets")
      fail(path, where + ": unknown key '" + item.key() + "'");
  for (const char *key : {"dtype", "shape", "data_offsets"})
    if (!entry.contains(key))
      fail(path, where + ": no " + key);

  StoredTensor tensor;
  tensor.name = name;
  const json &dtype = entry["dtype"];
  if (dtype == "F32")
    tensor.dtype = DType::F32;
  else if (dtype == "I32")
    tensor.dtype = DType::I32;
  else
    fail(path, where + ": dtype " + dtype.dump() + " is not \"F32\" or \"I32\"");

  const json &shape = entry["shape"];
  if (!shape.is_array())
    fail(path, where + ": its shape is " + jsonKind(shape) + ", not an array");
  // The element count is checked as numElements() computes it, so that no caller
  // overflows on a hostile shape.
  int64_t elements = 1;
  for (const json &size : shape) {
    tensor.shape.push_back(int64_t(readCount(path, where + ": shape size", size, INT64_MAX)));
    if (__builtin_mul_overflow(elements, tensor.shape.back(), &elements))
      fail(path, where + ": shape " + shape.dump() + ": its element count overflows 64 bits");
  }
  uint64_t bytes;
  if (__builtin_mul_overflow(uint64_t(elements), uint64_t(4), &bytes))
    fail(path, where + ": shape " + shape.dump() + ": its byte count overflows 64 bits");

  const json &offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2)
    fail(path, where + ": data_offsets " + offsets.dump() + " is not [begin, end]");
  tensor.begin = readCount(path, where + ": data offset", offsets[0], UINT64_MAX);
  tensor.end = readCount(path, where + ": data offset", offsets[1], UINT64_MAX);
  if (tensor.end < tensor.begin || tensor.end - tensor.begin != bytes)
    fail(path, where + ": data_offsets " + offsets.dump() + " do not hold the " +
                   std::to_string(bytes) + " bytes of shape " + shapeText(tensor.shape) + " " +
                   dtype.get<std::string>());

  auto stored = checksums.find(name);
  if (stored == checksums.end())
    fail(path, where + ": no checksum in " + kMetadataKey + " '" + kChecksumsKey + "'");
  tensor.crc32 = stored->second;
  return tensor;
}

/// Whether `name` is PREFIX-STEP.safetensors; STEP as std::to_string writes it, so that
/// each step has one name.
bool parseCheckpointName(const std::string &name, const std::string &prefix, int64_t &step) {
  const std::string head = prefix + "-", tail = kSuffix;
  if (name.size() <= head.size() + tail.size() || name.compare(0, head.size(), head) != 0 ||
      name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
    return false;
  const std::string digits = name.substr(head.size(), name.size() - head.size() - tail.size());
  if (digits.find_first_not_of("0123456789") != std::string::npos ||
      (digits.size() > 1 && digits[0] == '0'))
    return false;
  step = 0;
  for (char digit : digits)
    if (__builtin_mul_overflow(step, int64_t(10), &step) ||
        __builtin_add_overflow(step, int64_t(digit - '0'), &step))
      return false;
  return true;
}

} // namespace

void writeCheckpointFile(const std::string &path, const std::vector<TensorToWrite> &tensors,
                         const std::map<std::string, std::string> &metadata) {
  if (metadata.count(kChecksumsKey))
    fail(path,
         std::string("the metadata key '") + kChecksumsKey + "' is reserved for the checksums");
  json header = json::object(), checksums = json::object();
  std::vector<uint64_t> sizes;
  uint64_t offset = 0;
  for (const TensorToWrite &tensor : tensors) {
    const std::string where = "tensor '" + tensor.name + "'";
    if (tensor.name == kMetadataKey)
      fail(path, std::string("a tensor cannot be named ") + kMetadataKey);
    if (header.contains(tensor.name))
      fail(path, "two tensors named '" + tensor.name + "'");
    for (int64_t size : tensor.shape)
      if (size < 0)
        fail(path, where + ": shape " + shapeText(tensor.shape) + " has a negative size");
    const uint64_t bytes = uint64_t(numElements(tensor.shape)) * 4;
    if (bytes > 0 && !tensor.data)
      fail(path, where + ": no data");
    header[tensor.name] = {{"dtype", tensor.dtype == DType::F32 ? "F32" : "I32"},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + bytes}}};
    checksums[tensor.name] = hex8(checksum(tensor.data, bytes));
    sizes.push_back(bytes);
    offset += bytes;
  }
  json &meta = header[kMetadataKey] = metadata;
  std::string text;
  try {
    meta[kChecksumsKey] = checksums.dump();
    text = header.dump();
  } catch (const json::type_error &) {
    fail(path, "a tensor name or metadata string is not UTF-8");
  }
  text.append((kLengthBytes - text.size() % kLengthBytes) % kLengthBytes, ' ');
  unsigned char length[kLengthBytes];
  for (uint64_t i = 0; i < kLengthBytes; ++i)
    length[i] = static_cast<unsigned char>(uint64_t(text.size()) >> (8 * i));

  TemporaryFile file(path);
  file.write(length, sizeof length);
  file.write(text.data(), text.size());
  for (size_t i = 0; i < tensors.size(); ++i)
    file.write(tensors[i].data, sizes[i]);
  file.commit();
}

CheckpointReader::CheckpointReader(std::string path) : path_(std::move(path)) {
  const InputFile file(path_);
  const uint64_t fileSize = file.size();
  if (fileSize < kLengthBytes)
    fail(path_, "truncated: it holds " + std::to_string(fileSize) +
                    " bytes, fewer than the 8 of the header length");
  unsigned char length[kLengthBytes];
  file.readAt(0, length, kLengthBytes);
  uint64_t headerBytes = 0;
  for (uint64_t i = 0; i < kLengthBytes; ++i)
    headerBytes |= uint64_t(length[i]) << (8 * i);
  const std::string sizes = "8+" + std::to_string(headerBytes) + " bytes of header";
  if (headerBytes > fileSize - kLengthBytes) {
    // A header cut short still starts as JSON does; any other bytes are another file.
    char first = '{';
    if (fileSize > kLengthBytes)
      file.readAt(kLengthBytes, &first, 1);
    if (headerBytes <= kMaxHeaderBytes && first == '{')
      fail(path_, "truncated: the header says " + sizes + " but the file holds " +
                      std::to_string(fileSize) + " bytes");
    fail(path_, "not a checkpoint: header length " + std::to_string(headerBytes) +
                    " is larger than the file (" + std::to_string(fileSize) + " bytes)");
  }
  if (headerBytes > kMaxHeaderBytes)
    fail(path_, "not a checkpoint: header length " + std::to_string(headerBytes) +
                    " is larger than safetensors' limit of " + std::to_string(kMaxHeaderBytes));
  dataStart_ = kLengthBytes + headerBytes;

  std::string text(headerBytes, '\0');
  file.readAt(kLengthBytes, text.data(), headerBytes);
  // The JSON parser takes a NUL byte for the end of its input, and would ignore the rest.
  const size_t nul = text.find('\0');
  if (nul != std::string::npos)
    fail(path_, "not a checkpoint: its header is not JSON (a NUL byte at byte " +
                    std::to_string(kLengthBytes + nul) + " of the file)");
  json header;
  try {
    header = json::parse(text);
  } catch (const json::parse_error &error) {
    fail(path_, "not a checkpoint: its header is not JSON (a syntax error at byte " +
                    std::to_string(kLengthBytes + error.byte - 1) + " of the file)");
  }
  if (!header.is_object())
    fail(path_, "not a checkpoint: its header is " + jsonKind(header) + ", not an object");

  std::map<std::string, uint32_t> checksums;
  if (header.contains(kMetadataKey)) {
    const json &meta = header[kMetadataKey];
    if (!meta.is_object())
      fail(path_, std::string(kMetadataKey) + " is " + jsonKind(meta) + ", not an object");
    for (const auto &item : meta.items()) {
      if (!item.value().is_string())
        fail(path_, std::string(kMetadataKey) + " '" + item.key() + "' is " +
                        jsonKind(item.value()) + ", not a string");
      if (item.key() == kChecksumsKey)
        checksums = readChecksums(path_, item.value().get<std::string>());
      else
        metadata_[item.key()] = item.value().get<std::string>();
    }
  }

  for (const auto &item : header.items())
    if (item.key() != kMetadataKey)
      tensors_.push_back(readTensorEntry(path_, item.key(), item.value(), checksums));
  for (const auto &stored : checksums)
    if (stored.first == kMetadataKey || !header.contains(stored.first))
      fail(path_, std::string(kMetadataKey) + " '" + kChecksumsKey + "' has a checksum for '" +
                      stored.first + "', which is not a tensor");

  // File order; the header's keys are sorted by name, which breaks ties between empty
  // tensors.
  std::stable_sort(tensors_.begin(), tensors_.end(),
                   [](const StoredTensor &a, const StoredTensor &b) {
                     return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
                   });
  uint64_t dataBytes = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const StoredTensor &tensor = tensors_[i];
    if (tensor.begin < dataBytes)
      fail(path_, "tensors '" + tensors_[i - 1].name + "' and '" + tensor.name +
                      "' overlap: bytes [" + std::to_string(tensors_[i - 1].begin) + ", " +
                      std::to_string(tensors_[i - 1].end) + ") and [" +
                      std::to_string(tensor.begin) + ", " + std::to_string(tensor.end) +
                      ") of the data section");
    if (tensor.begin > dataBytes)
      fail(path_, "no tensor holds bytes [" + std::to_string(dataBytes) + ", " +
                      std::to_string(tensor.begin) + ") of the data section");
    dataBytes = tensor.end;
  }
  const uint64_t dataHeld = fileSize - dataStart_;
  const std::string layout = sizes + " and " + std::to_string(dataBytes) + " of data";
  if (dataBytes > dataHeld)
    fail(path_, "truncated: the header says " + layout + " but the file holds " +
                    std::to_string(fileSize) + " bytes");
  if (dataBytes < dataHeld)
    fail(path_, "the file holds " + std::to_string(fileSize) + " bytes, " +
                    std::to_string(dataHeld - dataBytes) + " more than the " + layout);
}

const StoredTensor *CheckpointReader::find(const std::string &name) const {
  for (const StoredTensor &tensor : tensors_)
    if (tensor.name == name)
      return &tensor;
  return nullptr;
}

std::vector<uint32_t> CheckpointReader::read(const StoredTensor &tensor) const {
  // Opened anew for each tensor, so that a reader holds no descriptor between reads.
  const InputFile file(path_);
  std::vector<uint32_t> elements((tensor.end - tensor.begin) / sizeof(uint32_t));
  const uint64_t bytes = elements.size() * sizeof(uint32_t);
  if (!file.readAt(dataStart_ + tensor.begin, elements.data(), bytes))
    fail(path_, "truncated: the file ends inside tensor '" + tensor.name + "'");
  const uint32_t computed = checksum(elements.data(), bytes);
  if (computed != tensor.crc32)
    fail(path_, "tensor '" + tensor.name + "': checksum mismatch (stored " + hex8(tensor.crc32) +
                    ", computed " + hex8(computed) + ")");
  return elements;
}

std::vector<std::pair<int64_t, std::string>> listCheckpoints(const std::string &folder,
                                                             const std::string &prefix) {
  std::vector<std::pair<int64_t, std::string>> found;
  DIR *dir = ::opendir(folder.c_str());
  if (!dir) {
    if (errno == ENOENT)
      return found;
    fail(folder, "cannot list the folder: " + systemError());
  }
  const std::string folderPrefix = folder.back() == '/' ? folder : folder + "/";
  int64_t step;
  while (const dirent *entry = ::readdir(dir))
    if (parseCheckpointName(entry->d_name, prefix, step))
      found.emplace_back(step, folderPrefix + entry->d_name);
  ::closedir(dir);
  std::sort(found.begin(), found.end());
  return found;
}

void pruneCheckpoints(const std::string &folder, const std::string &prefix, int64_t keep) {
  if (keep < 0)
    fail(folder, "cannot keep " + std::to_string(keep) + " checkpoints");
  const auto found = listCheckpoints(folder, prefix);
  for (size_t i = 0; i + size_t(keep) < found.size(); ++i)
    // Gone already is as good as deleted (another process pruning the same folder).
    if (::unlink(found[i].second.c_str()) != 0 && errno != ENOENT)
      fail(found[i].second, "cannot delete it: " + systemError());
  if (found.empty())
    return;
  // A temporary of a step up to the newest checkpoint's was left by a writer that
  // died (a kill during a write): nobody will rename it any more.
  DIR *dir = ::opendir(folder.c_str());
  if (!dir)
    return;
  const std::string folderPrefix = folder.back() == '/' ? folder : folder + "/";
  int64_t step;
  while (const dirent *entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    const size_t tmp = name.rfind(".tmp-");
    if (name[0] == '.' && tmp != std::string::npos &&
        parseCheckpointName(name.substr(1, tmp - 1), prefix, step) && step <= found.back().first)
      ::unlink((folderPrefix + name).c_str());
  }
  ::closedir(dir);
}

} // namespace shardrt
