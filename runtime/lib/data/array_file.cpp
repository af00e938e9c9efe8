// Element types, plans, and what the readers share (reading.h): a header read from a
// file may lie, so every size it announces is checked against overflow and against the
// bytes that are really there before anything is allocated for it.
#include "reading.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace shardrt::data {

size_t elementSize(ElementType type) {
  switch (type) {
  case ElementType::U8:
    return 1;
  case ElementType::U16:
    return 2;
  case ElementType::U32:
  case ElementType::I32:
  case ElementType::F32:
    return 4;
  case ElementType::I64:
  case ElementType::F64:
    return 8;
  }
  return 0;
}

const char *elementTypeName(ElementType type) {
  switch (type) {
  case ElementType::U8:
    return "uint8";
  case ElementType::U16:
    return "uint16";
  case ElementType::U32:
    return "uint32";
  case ElementType::I32:
    return "int32";
  case ElementType::I64:
    return "int64";
  case ElementType::F32:
    return "float32";
  case ElementType::F64:
    return "float64";
  }
  return "?";
}

int64_t ArrayPlan::count() const {
  int64_t elements = 1;
  for (int64_t size : shape)
    elements *= size;
  return elements;
}

uint64_t ArrayPlan::bytes() const { return uint64_t(count()) * elementSize(type); }

std::string quoted(const std::string &path) { return "'" + path + "'"; }

void fail(const std::string &what, const std::string &problem) {
  throw DataError(what + ": " + problem);
}

std::string systemError() { return std::strerror(errno); }

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string elementsText(const ArrayPlan &plan) {
  return std::to_string(plan.count()) + " " + elementTypeName(plan.type) + " elements (" +
         std::to_string(plan.bytes()) + " bytes)";
}

void checkShape(const ArrayPlan &plan) {
  const std::string shape = "its shape " + shapeText(plan.shape);
  if (plan.shape.empty())
    fail(plan.what, shape + " is a single value, not an array of examples (a dimension 0)");
  // Each size as unsigned: a negative one, had a reader let it through, overflows too.
  uint64_t elements = 1;
  for (int64_t size : plan.shape) {
    if (size == 0)
      fail(plan.what, shape + " holds no elements");
    if (__builtin_mul_overflow(elements, uint64_t(size), &elements) || elements > INT64_MAX)
      fail(plan.what, shape + " has too many elements to count in 63 bits");
  }
  uint64_t bytes;
  if (__builtin_mul_overflow(elements, uint64_t(elementSize(plan.type)), &bytes) ||
      bytes > INT64_MAX)
    fail(plan.what,
         shape + " of " + elementTypeName(plan.type) + " has too many bytes to count in 63 bits");
}

void checkHeld(const ArrayPlan &plan, uint64_t held) {
  const uint64_t bytes = plan.bytes();
  if (held == bytes)
    return;
  const std::string announced = "its header announces " + elementsText(plan) + ", but " +
                                std::to_string(held) + " bytes follow it";
  if (held < bytes)
    fail(plan.what, "truncated: " + announced);
  const uint64_t extra = held - bytes;
  fail(plan.what,
       std::to_string(extra) + (extra == 1 ? " byte" : " bytes") + " too many: " + announced);
}

void checkUnchanged(const ArrayPlan &opened, const ArrayPlan &now) {
  if (now.type != opened.type || now.shape != opened.shape)
    fail(opened.what, "changed since it was opened: its header announced " + elementsText(opened) +
                          " of shape " + shapeText(opened.shape) + ", and now " +
                          elementsText(now) + " of shape " + shapeText(now.shape));
}

void readElements(const ArrayPlan &plan, const ReadNext &read, uint8_t *out) {
  uint64_t held = read(out, plan.bytes());
  if (held == plan.bytes()) {
    // Counted to the end, for the message.
    uint8_t rest[1 << 16];
    while (const uint64_t got = read(rest, sizeof rest))
      held += got;
  }
  checkHeld(plan, held);
}

InputFile::InputFile(const std::string &path) : path_(path) {
  // O_NONBLOCK so that a FIFO given by mistake fails at the type check instead of
  // waiting for a writer.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0)
    fail(quoted(path_), errno == ENOENT ? "no such file" : "cannot open it: " + systemError());
  struct stat info;
  if (::fstat(fd_, &info) != 0) {
    const std::string error = systemError();
    ::close(fd_);
    fail(quoted(path_), "cannot read it: " + error);
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd_);
    fail(quoted(path_),
         S_ISDIR(info.st_mode) ? "it is a folder, not a file" : "it is not a regular file");
  }
  size_ = uint64_t(info.st_size);
}

InputFile::~InputFile() { ::close(fd_); }

uint64_t InputFile::readAt(uint64_t offset, void *out, uint64_t count) const {
  char *bytes = static_cast<char *>(out);
  uint64_t done = 0;
  while (done < count) {
    const ssize_t got =
        ::pread(fd_, bytes + done, std::min<uint64_t>(count - done, 1 << 30), off_t(offset + done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      fail(quoted(path_), "cannot read it: " + systemError());
    if (got == 0)
      break;
    done += uint64_t(got);
  }
  return done;
}

std::string InputFile::read(uint64_t offset, uint64_t count) const {
  // Never more than the file holds, whatever a header asked for.
  const uint64_t available = offset < size_ ? size_ - offset : 0;
  std::string bytes(std::min(count, available), '\0');
  bytes.resize(readAt(offset, bytes.data(), bytes.size()));
  return bytes;
}

} // namespace shardrt::data
