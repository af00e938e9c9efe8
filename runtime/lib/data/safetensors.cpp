// One tensor of a safetensors file (huggingface/safetensors, "Format"):
//
//   8 bytes    N, the header's length, a little-endian u64
//   N bytes    a JSON object: per tensor {"dtype", "shape", "data_offsets": [begin, end]},
//              offsets relative to the data section, and an optional "__metadata__"
//   the rest   the data section: the tensors' raw little-endian bytes
//
// Any writer's file, unlike driver/checkpoint_file.cpp, which reads the driver's own
// checkpoints with their checksums: only the tensor asked for is checked, and its bytes
// are mapped where they lie.
#include "reading.h"

#include <nlohmann/json.hpp>

namespace shardrt::data {
namespace {

using nlohmann::json;

constexpr uint64_t kLengthBytes = 8;
/// The safetensors library refuses longer headers.
constexpr uint64_t kMaxHeaderBytes = 100000000;
constexpr const char *kMetadataKey = "__metadata__";

struct Dtype {
  const char *name;
  ElementType type;
};
constexpr Dtype kDtypes[] = {
    {"U8", ElementType::U8},   {"U16", ElementType::U16}, {"U32", ElementType::U32},
    {"I32", ElementType::I32}, {"I64", ElementType::I64}, {"F32", ElementType::F32},
    {"F64", ElementType::F64},
};

/// A JSON integer in [0, limit], or fails naming `where`.
uint64_t readCount(const std::string &what, const std::string &where, const json &value,
                   uint64_t limit) {
  // The parser keeps non-negative integers as unsigned; negative ones, fractions and
  // integers beyond 64 bits are other types.
  if (!value.is_number_unsigned() || value.get<uint64_t>() > limit)
    fail(what,
         where + " " + value.dump() + " is not an integer in [0, " + std::to_string(limit) + "]");
  return value.get<uint64_t>();
}

/// The header's JSON object, read after its length has been checked against the file.
json readHeader(const InputFile &file, const std::string &what, uint64_t &dataStart) {
  const uint64_t fileSize = file.size();
  const std::string length = file.read(0, kLengthBytes);
  if (length.size() < kLengthBytes)
    fail(what, "truncated: it holds " + std::to_string(fileSize) +
                   " bytes, fewer than the 8 of the header length");
  uint64_t headerBytes = 0;
  for (uint64_t i = 0; i < kLengthBytes; ++i)
    headerBytes |= uint64_t(uint8_t(length[i])) << (8 * i);
  if (headerBytes > kMaxHeaderBytes)
    fail(what, "not a safetensors file: header length " + std::to_string(headerBytes) +
                   " is more than safetensors' limit of " + std::to_string(kMaxHeaderBytes));
  if (headerBytes > fileSize - kLengthBytes)
    fail(what, "header length " + std::to_string(headerBytes) + " is more than the " +
                   std::to_string(fileSize - kLengthBytes) +
                   " bytes after it (truncated, or not a safetensors file)");
  dataStart = kLengthBytes + headerBytes;
  const std::string text = file.read(kLengthBytes, headerBytes);
  // The JSON parser takes a NUL byte for the end of its input, and would ignore the rest.
  const size_t nul = text.find('\0');
  if (nul != std::string::npos)
    fail(what, "not a safetensors file: its header is not JSON (a NUL byte at byte " +
                   std::to_string(kLengthBytes + nul) + " of the file)");
  json header;
  try {
    header = json::parse(text);
  } catch (const json::parse_error &error) {
    fail(what, "not a safetensors file: its header is not JSON (a syntax error at byte " +
                   std::to_string(kLengthBytes + error.byte - 1) + " of the file)");
  }
  if (!header.is_object())
    fail(what, "not a safetensors file: its header is not a JSON object");
  return header;
}

/// `entry`'s dtype, shape and offsets into `plan`; offsets must hold exactly the shape's
/// bytes inside the data section of `dataBytes`. Returns the tensor's start in it.
uint64_t readEntry(ArrayPlan &plan, const json &entry, uint64_t dataBytes) {
  if (!entry.is_object())
    fail(plan.what, "its entry is " + entry.dump() + ", not an object");
  for (const char *key : {"dtype", "shape", "data_offsets"})
    if (!entry.contains(key))
      fail(plan.what, std::string("its entry has no ") + key);

  const json &dtype = entry["dtype"];
  const Dtype *known = nullptr;
  for (const Dtype &candidate : kDtypes)
    if (dtype == candidate.name)
      known = &candidate;
  if (!known) {
    std::string accepted;
    for (const Dtype &candidate : kDtypes)
      accepted += (accepted.empty() ? "" : ", ") + std::string(candidate.name);
    fail(plan.what, "dtype " + dtype.dump() + " is not supported; accepted: " + accepted);
  }
  plan.type = known->type;

  const json &shape = entry["shape"];
  if (!shape.is_array())
    fail(plan.what, "its shape " + shape.dump() + " is not an array");
  for (const json &size : shape)
    plan.shape.push_back(int64_t(readCount(plan.what, "shape size", size, INT64_MAX)));
  checkShape(plan);

  const json &offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2)
    fail(plan.what, "data_offsets " + offsets.dump() + " is not [begin, end]");
  const uint64_t begin = readCount(plan.what, "data offset", offsets[0], UINT64_MAX);
  const uint64_t end = readCount(plan.what, "data offset", offsets[1], UINT64_MAX);
  if (end > dataBytes)
    fail(plan.what, "truncated: data_offsets " + offsets.dump() +
                        " end past the data section, "
                        "which holds " +
                        std::to_string(dataBytes) + " bytes");
  if (end < begin || end - begin != plan.bytes())
    fail(plan.what, "data_offsets " + offsets.dump() + " do not hold the " + elementsText(plan) +
                        " of shape " + shapeText(plan.shape));
  return begin;
}

} // namespace

ArrayPlan openSafetensors(const std::string &path, const std::string &tensor) {
  ArrayPlan plan;
  plan.what = quoted(path) + " tensor '" + tensor + "'";
  plan.path = path;
  const InputFile file(path);
  uint64_t dataStart = 0;
  const json header = readHeader(file, quoted(path), dataStart);
  if (tensor == kMetadataKey || !header.contains(tensor)) {
    std::string names;
    for (const auto &item : header.items())
      if (item.key() != kMetadataKey)
        names += (names.empty() ? "'" : ", '") + item.key() + "'";
    fail(quoted(path),
         "no tensor '" + tensor + "'; it holds " + (names.empty() ? std::string("none") : names));
  }
  plan.offset = dataStart + readEntry(plan, header[tensor], file.size() - dataStart);
  return plan;
}

} // namespace shardrt::data
