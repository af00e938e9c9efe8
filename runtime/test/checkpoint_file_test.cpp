// shardrt-test-checkpoint-file MODE ARGS: checkpoint files (lib/driver/checkpoint_file.h).
//
//   write DIR            writes DIR/ckpt-40.safetensors (the reference tensors below) over
//                        an older file of that name, reads it back and compares bitwise
//   read FILE            reads every tensor of FILE and prints them; on any error prints
//                        it on stderr and exits 1
//   damage KIND IN OUT   copies IN to OUT damaged one way: cut-length, cut-header,
//                        cut-data (cut inside the length, the header, the data), cut-end
//                        (one byte short), extra (3 bytes more), flip (one bit in the
//                        middle of params/dense1.w), garbage-header (not JSON),
//                        huge-length (7523422893)
//   hostile DIR          files whose headers are wrong one way each (types, shapes,
//                        offsets, checksums, nesting); prints each one's error
//   failed-write DIR     writes that fail (no folder, a parent that is a file, a target
//                        that is a folder, the file size limit, bad arguments) leave the
//                        older file as it was and no temporary file
//   list DIR             listCheckpoints and pruneCheckpoints among names to ignore
//
// One process, no MPI; checkpoint_file.cpp is compiled in, since the library exports
// its C ABI only. Each mode but read and damage ends with `checkpoint-file: N checks
// passed` and exits non-zero on any failure.
#include "driver/checkpoint_file.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <string>
#include <vector>

using namespace shardrt;
using nlohmann::json;

namespace {

int checks = 0, failures = 0;

void expect(bool ok, const std::string &what) {
  ++checks;
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "FAILED: %s\n", what.c_str());
  }
}

int summary() {
  if (failures == 0)
    std::printf("checkpoint-file: %d checks passed\n", checks);
  else
    std::printf("checkpoint-file: %d of %d checks FAILED\n", failures, checks);
  return failures == 0 ? 0 : 1;
}

std::string readWhole(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeWhole(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

/// The names in `folder`, but . and ..
std::set<std::string> listNames(const std::string &folder) {
  std::set<std::string> names;
  if (DIR *dir = opendir(folder.c_str())) {
    while (const dirent *entry = readdir(dir))
      if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0)
        names.insert(entry->d_name);
    closedir(dir);
  }
  return names;
}

bool anyTemporary(const std::string &folder) {
  for (const std::string &name : listNames(folder))
    if (name.find(".tmp-") != std::string::npos)
      return true;
  return false;
}

std::string describe(const Shape &shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "]";
}

float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// The tensors `write` stores, in the order given (not the header's sorted one), with
/// the edge cases of the format: a scalar, an empty tensor, NaN with a payload, -0,
/// infinities, denormals, the i32 extremes.
struct Reference {
  std::vector<float> weights, bias, specials, momentum;
  std::vector<int32_t> step = {40}, labels = {-3, -2, -1, 0, INT32_MAX, INT32_MIN};
  std::vector<TensorToWrite> tensors;
  std::map<std::string, std::string> metadata = {
      {"format", "shardrt-checkpoint-test"}, {"step", "40"}, {"model", "T\xc3\xabst \"quoted\""}};

  Reference() {
    for (int i = 0; i < 60; ++i) {
      weights.push_back(0.25f * float(i));
      momentum.push_back(-0.5f * float(i));
    }
    bias = {-1.5f, -0.0f, 0.5f, floatOf(1), 3.4028235e38f};
    specials = {floatOf(0x7fc00123), floatOf(0xff800000), floatOf(0x7f800000), floatOf(0x80000001)};
    tensors = {{"params/dense1.w", DType::F32, {3, 4, 5}, weights.data()},
               {"params/dense1.b", DType::F32, {5}, bias.data()},
               {"specials", DType::F32, {4}, specials.data()},
               {"step", DType::I32, {}, step.data()},
               {"labels", DType::I32, {2, 3}, labels.data()},
               {"empty", DType::F32, {0, 3}, nullptr},
               {"opt_state/mu/params/dense1.w", DType::F32, {3, 4, 5}, momentum.data()}};
  }
  Reference(const Reference &) = delete;
  Reference &operator=(const Reference &) = delete;
};

int writeMode(const std::string &folder) {
  const std::string path = folder + "/ckpt-40.safetensors";
  const int32_t old = 7;
  writeCheckpointFile(path, {{"old", DType::I32, {1}, &old}}, {{"format", "old"}});
  const Reference reference;
  writeCheckpointFile(path, reference.tensors, reference.metadata);

  CheckpointReader reader(path);
  expect(reader.metadata() == reference.metadata, "the metadata reads back, without crc32");
  expect(reader.tensors().size() == reference.tensors.size(), "as many tensors as written");
  std::string order;
  uint64_t dataBytes = 0;
  for (size_t i = 0; i < reader.tensors().size() && i < reference.tensors.size(); ++i) {
    const StoredTensor &stored = reader.tensors()[i];
    const TensorToWrite &written = reference.tensors[i];
    order += " " + stored.name;
    expect(stored.name == written.name, "tensor " + std::to_string(i) + " is " + written.name);
    expect(stored.dtype == written.dtype && stored.shape == written.shape,
           written.name + ": dtype and shape " + describe(stored.shape));
    expect(stored.begin == dataBytes, written.name + ": begins where the previous one ends");
    const std::vector<uint32_t> elements = reader.read(stored);
    const size_t bytes = size_t(numElements(written.shape)) * 4;
    expect(elements.size() * 4 == bytes &&
               (bytes == 0 || std::memcmp(elements.data(), written.data, bytes) == 0),
           written.name + ": read back bitwise");
    expect(stored.crc32 ==
               uint32_t(crc32(0, static_cast<const Bytef *>(written.data), uInt(bytes))),
           written.name + ": its CRC-32 is zlib's");
    dataBytes = stored.end;
  }
  expect(reader.find("step") == &reader.tensors()[3], "find(\"step\")");
  expect(reader.find("nothing") == nullptr, "find(\"nothing\") is nullptr");
  const uint64_t fileSize = readWhole(path).size();
  expect((fileSize - dataBytes) % 8 == 0, "the data section starts at a multiple of 8");
  expect(!anyTemporary(folder), "no temporary file left");
  std::printf("write: '%s' replaced an older file: %zu tensors, %zu metadata entries\n",
              path.c_str(), reader.tensors().size(), reader.metadata().size());
  std::printf("write: in file order:%s\n", order.c_str());
  std::printf("write: read back bitwise; no temporary file left\n");
  return summary();
}

int readMode(const std::string &path) {
  try {
    CheckpointReader reader(path);
    std::printf("read: '%s': %zu tensors, %zu metadata entries\n", path.c_str(),
                reader.tensors().size(), reader.metadata().size());
    for (const StoredTensor &tensor : reader.tensors()) {
      reader.read(tensor);
      std::printf("  %s %s %s bytes [%" PRIu64 ", %" PRIu64 ") crc32 %08x\n", tensor.name.c_str(),
                  tensor.dtype == DType::F32 ? "F32" : "I32", describe(tensor.shape).c_str(),
                  tensor.begin, tensor.end, tensor.crc32);
    }
    std::printf("read: every checksum matches\n");
    return 0;
  } catch (const CheckpointError &error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
}

int damageMode(const std::string &kind, const std::string &in, const std::string &out) {
  std::string bytes = readWhole(in);
  if (bytes.size() < 8) {
    std::fprintf(stderr, "'%s' is too short to damage\n", in.c_str());
    return 2;
  }
  uint64_t headerBytes = 0;
  for (int i = 0; i < 8; ++i)
    headerBytes |= uint64_t(uint8_t(bytes[i])) << (8 * i);
  const size_t dataStart = 8 + size_t(headerBytes);
  if (kind == "cut-length") {
    bytes.resize(5);
  } else if (kind == "cut-header") {
    bytes.resize(8 + headerBytes / 2);
  } else if (kind == "cut-data") {
    bytes.resize(dataStart + (bytes.size() - dataStart) / 2);
  } else if (kind == "cut-end") {
    bytes.pop_back();
  } else if (kind == "extra") {
    bytes.append(3, '\0');
  } else if (kind == "flip") {
    const CheckpointReader reader(in);
    const StoredTensor &tensor = *reader.find("params/dense1.w");
    bytes[dataStart + (tensor.begin + tensor.end) / 2] ^= 1;
  } else if (kind == "garbage-header") {
    const std::string garbage = "this is not JSON";
    bytes.replace(8, garbage.size(), garbage);
  } else if (kind == "huge-length") {
    for (int i = 0; i < 8; ++i)
      bytes[i] = char(uint64_t(7523422893) >> (8 * i));
  } else {
    std::fprintf(stderr, "unknown damage '%s'\n", kind.c_str());
    return 2;
  }
  writeWhole(out, bytes);
  return 0;
}

/// A checkpoint of `header` (text) and `dataBytes` zero bytes, as the writer lays it out.
void writeRaw(const std::string &path, std::string header, size_t dataBytes) {
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i)
    bytes[i] = char(uint64_t(header.size()) >> (8 * i));
  writeWhole(path, bytes + header + std::string(dataBytes, '\0'));
}

std::string zeroChecksum(size_t bytes) {
  const std::vector<Bytef> zeros(bytes);
  char text[9];
  std::snprintf(text, sizeof text, "%08lx", crc32(0, zeros.data(), uInt(bytes)));
  return text;
}

/// Reads `path` whole; prints its error, or "accepted".
void expectRefused(const std::string &name, const std::string &path) {
  try {
    CheckpointReader reader(path);
    for (const StoredTensor &tensor : reader.tensors())
      reader.read(tensor);
    expect(false, name + " is refused");
    std::printf("%s: accepted\n", name.c_str());
  } catch (const CheckpointError &error) {
    expect(true, name);
    std::printf("%s: %s\n", name.c_str(), error.what());
  }
}

int hostileMode(const std::string &folder) {
  // a: f32 [2, 3] at bytes [0, 24), b: i32 scalar at [24, 28), both zeros.
  const std::string crcA = zeroChecksum(24), crcB = zeroChecksum(4);
  const json base = {
      {"a", {{"dtype", "F32"}, {"shape", {2, 3}}, {"data_offsets", {0, 24}}}},
      {"b", {{"dtype", "I32"}, {"shape", json::array()}, {"data_offsets", {24, 28}}}},
      {"__metadata__", {{"crc32", json{{"a", crcA}, {"b", crcB}}.dump()}, {"step", "1"}}}};
  const std::string control = folder + "/control.safetensors";
  writeRaw(control, base.dump(), 28);
  try {
    CheckpointReader reader(control);
    for (const StoredTensor &tensor : reader.tensors())
      reader.read(tensor);
    expect(true, "the unmodified file reads");
  } catch (const CheckpointError &error) {
    expect(false, std::string("the unmodified file reads: ") + error.what());
  }

  const std::vector<std::pair<const char *, std::string>> texts = {
      {"not-json", "this is not JSON"},
      {"empty-header", ""},
      {"nul-padding", base.dump() + std::string(8, '\0')},
      {"deep-nesting", std::string(1000000, '[') + std::string(1000000, ']')},
      {"array", "[1, 2]"},
  };
  for (const auto &[name, text] : texts) {
    const std::string path = folder + "/hostile-" + name + ".safetensors";
    writeRaw(path, text, 28);
    expectRefused(name, path);
  }

  // Each case sets these JSON pointers of the header to these values (`erase` removes).
  const json erase(json::value_t::discarded);
  const uint64_t top = UINT64_MAX;
  const std::vector<std::pair<const char *, std::vector<std::pair<const char *, json>>>> cases = {
      {"metadata-string", {{"/__metadata__", "step=1"}}},
      {"metadata-number", {{"/__metadata__/step", 1}}},
      {"no-metadata", {{"/__metadata__", erase}}},
      {"checksum-missing", {{"/__metadata__/crc32", json{{"a", crcA}}.dump()}}},
      {"checksums-not-json", {{"/__metadata__/crc32", "a=1"}}},
      {"checksum-not-hex", {{"/__metadata__/crc32", json{{"a", "0x123456"}, {"b", crcB}}.dump()}}},
      {"checksum-extra",
       {{"/__metadata__/crc32", json{{"a", crcA}, {"b", crcB}, {"c", "00000000"}}.dump()}}},
      {"entry-array", {{"/a", {0, 24}}}},
      {"unknown-key", {{"/a/offsets", {0, 24}}}},
      {"no-dtype", {{"/a/dtype", erase}}},
      {"dtype-f64", {{"/a/dtype", "F64"}}},
      {"dtype-number", {{"/a/dtype", 32}}},
      {"shape-string", {{"/a/shape", "2x3"}}},
      {"shape-negative", {{"/a/shape", {-2, -3}}}},
      {"shape-fraction", {{"/a/shape", {2.5, 3}}}},
      {"shape-beyond-int64", {{"/a/shape", {top}}}},
      {"shape-elements-overflow", {{"/a/shape", {int64_t(1) << 62, 4, 0}}}},
      {"shape-bytes-overflow", {{"/a/shape", {int64_t(1) << 62}}}},
      {"shape-mismatch", {{"/a/shape", {2, 4}}}},
      {"offsets-three", {{"/a/data_offsets", {0, 24, 28}}}},
      {"offsets-reversed", {{"/a/data_offsets", {24, 0}}}},
      {"offset-string", {{"/a/data_offsets", {"0", 24}}}},
      {"overlap", {{"/b/data_offsets", {20, 24}}}},
      {"gap", {{"/b/data_offsets", {28, 32}}}},
      {"gap-at-start", {{"/a/data_offsets", {4, 28}}, {"/b/data_offsets", {28, 32}}}},
      {"far-offsets",
       {{"/c", {{"dtype", "I32"}, {"shape", json::array()}, {"data_offsets", {top - 4, top}}}},
        {"/__metadata__/crc32", json{{"a", crcA}, {"b", crcB}, {"c", crcB}}.dump()}}},
  };
  for (const auto &[name, changes] : cases) {
    json header = base;
    for (const auto &[pointer, value] : changes) {
      const json::json_pointer at(pointer);
      if (value.is_discarded())
        header[at.parent_pointer()].erase(at.back());
      else
        header[at] = value;
    }
    const std::string path = folder + "/hostile-" + name + ".safetensors";
    writeRaw(path, header.dump(), 28);
    expectRefused(name, path);
  }
  return summary();
}

int failedWriteMode(const std::string &folder) {
  const std::string path = folder + "/ckpt-1.safetensors";
  const Reference reference;
  writeCheckpointFile(path, reference.tensors, reference.metadata);
  const std::string before = readWhole(path);
  mkdir((folder + "/ckpt-2.safetensors").c_str(), 0755);
  const std::set<std::string> names = listNames(folder);

  const float one = 1;
  const std::vector<TensorToWrite> good = {{"a", DType::F32, {}, &one}};
  auto attempt = [&](const char *what, const std::string &target,
                     const std::vector<TensorToWrite> &tensors,
                     const std::map<std::string, std::string> &metadata) {
    try {
      writeCheckpointFile(target, tensors, metadata);
      expect(false, std::string(what) + ": the write fails");
    } catch (const CheckpointError &error) {
      std::printf("failed-write: %s: %s\n", what, error.what());
    }
    expect(readWhole(path) == before, std::string(what) + ": the older file is as it was");
    expect(listNames(folder) == names, std::string(what) + ": no file added or removed");
  };

  attempt("no folder", folder + "/missing/ckpt-1.safetensors", good, {});
  attempt("parent is a file", path + "/ckpt-1.safetensors", good, {});
  attempt("target is a folder", folder + "/ckpt-2.safetensors", good, {});
  // Root may write anywhere, but not past RLIMIT_FSIZE: the temporary file fails
  // half-written.
  signal(SIGXFSZ, SIG_IGN);
  rlimit limit;
  getrlimit(RLIMIT_FSIZE, &limit);
  const rlimit lowered = {64, limit.rlim_max};
  setrlimit(RLIMIT_FSIZE, &lowered);
  attempt("file size limit", path, reference.tensors, reference.metadata);
  setrlimit(RLIMIT_FSIZE, &limit);

  attempt("duplicate name", path, {good[0], good[0]}, {});
  attempt("reserved name", path, {{"__metadata__", DType::F32, {}, &one}}, {});
  attempt("reserved metadata key", path, good, {{"crc32", "{}"}});
  attempt("negative size", path, {{"a", DType::F32, {2, -1}, &one}}, {});
  attempt("no data", path, {{"a", DType::F32, {2}, nullptr}}, {});
  attempt("not UTF-8", path, {{"a\xff", DType::F32, {}, &one}}, {});
  return summary();
}

std::string listSteps(const std::string &folder, const std::string &prefix) {
  std::string text;
  for (const auto &[step, path] : listCheckpoints(folder, prefix)) {
    text += " " + std::to_string(step);
    expect(path == folder + "/" + prefix + "-" + std::to_string(step) + ".safetensors",
           "the path of step " + std::to_string(step));
  }
  return text.empty() ? " (none)" : text;
}

int listMode(const std::string &folder) {
  const std::vector<std::string> checkpoints = {"ckpt-0.safetensors",
                                                "ckpt-5.safetensors",
                                                "ckpt-40.safetensors",
                                                "ckpt-100.safetensors",
                                                "ckpt-1000000000000.safetensors",
                                                "best-7.safetensors"};
  // A writer killed at step 40 left its temporary; one of a step past the newest
  // checkpoint may still be being written.
  const std::string staleTemporary = ".ckpt-40.safetensors.tmp-123";
  const std::vector<std::string> others = {"ckpt-40.safetensors.tmp-123",
                                           ".ckpt-2000000000000.safetensors.tmp-123",
                                           "ckpt-x.safetensors",
                                           "ckpt-.safetensors",
                                           "ckpt-007.safetensors",
                                           "ckpt--3.safetensors",
                                           "ckpt-+3.safetensors",
                                           "ckpt-3.json",
                                           "ckpt-3.safetensors.bak",
                                           "ckptx-3.safetensors",
                                           "ckpt-3",
                                           "ckpt-99999999999999999999.safetensors",
                                           "other-ckpt-3.safetensors"};
  for (const std::string &name : checkpoints)
    writeWhole(folder + "/" + name, "");
  for (const std::string &name : others)
    writeWhole(folder + "/" + name, "");
  writeWhole(folder + "/" + staleTemporary, "");

  std::printf("list: ckpt:%s\n", listSteps(folder, "ckpt").c_str());
  std::printf("list: best:%s\n", listSteps(folder, "best").c_str());
  pruneCheckpoints(folder, "ckpt", 5);
  std::printf("list: after keeping 5:%s\n", listSteps(folder, "ckpt").c_str());
  pruneCheckpoints(folder, "ckpt", 3);
  std::printf("list: after keeping 3:%s\n", listSteps(folder, "ckpt").c_str());
  pruneCheckpoints(folder, "ckpt", 0);
  std::printf("list: after keeping 0:%s\n", listSteps(folder, "ckpt").c_str());
  std::printf("list: best:%s\n", listSteps(folder, "best").c_str());
  bool othersKept = true;
  for (const std::string &name : others)
    othersKept = othersKept && listNames(folder).count(name);
  expect(othersKept, "pruning leaves the other names alone");
  expect(!listNames(folder).count(staleTemporary), "pruning deletes a killed writer's temporary");
  std::printf("list: a missing folder:%s\n", listSteps(folder + "/missing", "ckpt").c_str());
  for (const auto &[what, call] : std::vector<std::pair<const char *, std::function<void()>>>{
           {"a file as the folder", [&] { listCheckpoints(folder + "/ckpt-3.json", "ckpt"); }},
           {"keep -1", [&] { pruneCheckpoints(folder, "ckpt", -1); }}}) {
    try {
      call();
      expect(false, std::string(what) + " fails");
    } catch (const CheckpointError &error) {
      std::printf("list: %s: %s\n", what, error.what());
    }
  }
  return summary();
}

} // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "write" && argc == 3)
      return writeMode(argv[2]);
    if (mode == "read" && argc == 3)
      return readMode(argv[2]);
    if (mode == "damage" && argc == 5)
      return damageMode(argv[2], argv[3], argv[4]);
    if (mode == "hostile" && argc == 3)
      return hostileMode(argv[2]);
    if (mode == "failed-write" && argc == 3)
      return failedWriteMode(argv[2]);
    if (mode == "list" && argc == 3)
      return listMode(argv[2]);
  } catch (const CheckpointError &error) {
    std::fprintf(stderr, "FAILED: %s\n", error.what());
    return 1;
  }
  std::fprintf(stderr, "usage: shardrt-test-checkpoint-file write|hostile|failed-write|list DIR\n"
                       "       shardrt-test-checkpoint-file read FILE\n"
                       "       shardrt-test-checkpoint-file damage KIND IN OUT\n");
  return 2;
}
