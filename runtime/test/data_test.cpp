// shardrt-test-data FORMAT ARGS: opens a data file (lib/data/array_file.h) and prints
// its plan and its elements, for test/Data/*.test.
//
//   npy FILE                       openNpy
//   npz FILE MEMBER                openNpz
//   safetensors FILE TENSOR        openSafetensors
//   idx FILE                       openIdx
//   tokens FILE TYPE               openTokens (TYPE: uint8, uint16, uint32, ...)
//   images FOLDER HEIGHT WIDTH C   openImageFolder: "classes: ..." first, then the images
//                                  and the labels
//
// Each array prints two lines:
//
//   WHAT: TYPE [SHAPE], raw at offset N     (or ", produced")
//   values: count N, sum S, first [up to 8 values], fnv1a64 HASH
//
// the sum in double, in order, and the hash over the elements' little-endian bytes, so
// that a Python script can print the same line from the array it wrote. A raw array is
// read from its file at its offset, a produced one produced. A DataError prints
// "error: WHAT" on stderr and exits 1; bad arguments exit 2. One process, no MPI; the
// data readers are linked in as objects, since the library exports its C ABI only.
#include "data/array_file.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace shardrt::data;

namespace {

uint64_t fnv1a64(const std::vector<uint8_t> &bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (uint8_t byte : bytes) {
    hash ^= byte;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

/// Element i of `bytes` as text, and as a double for the sum.
std::string elementText(ElementType type, const uint8_t *element, double &value) {
  char text[64];
  auto load = [element](auto sample) {
    std::memcpy(&sample, element, sizeof sample);
    return sample;
  };
  switch (type) {
  case ElementType::U8:
  case ElementType::U16:
  case ElementType::U32: {
    const uint64_t number = type == ElementType::U8    ? load(uint8_t())
                            : type == ElementType::U16 ? load(uint16_t())
                                                       : load(uint32_t());
    value = double(number);
    std::snprintf(text, sizeof text, "%" PRIu64, number);
    break;
  }
  case ElementType::I32:
  case ElementType::I64: {
    const int64_t number = type == ElementType::I32 ? load(int32_t()) : load(int64_t());
    value = double(number);
    std::snprintf(text, sizeof text, "%" PRId64, number);
    break;
  }
  case ElementType::F32:
  case ElementType::F64:
    value = type == ElementType::F32 ? double(load(float())) : load(double());
    std::snprintf(text, sizeof text, "%.17g", value);
    break;
  }
  return text;
}

void printArray(const ArrayPlan &plan) {
  std::string shape;
  for (int64_t size : plan.shape)
    shape += (shape.empty() ? "" : ", ") + std::to_string(size);
  std::vector<uint8_t> bytes(plan.bytes());
  if (plan.produce) {
    std::printf("%s: %s [%s], produced\n", plan.what.c_str(), elementTypeName(plan.type),
                shape.c_str());
    plan.produce(bytes.data());
  } else {
    std::printf("%s: %s [%s], raw at offset %" PRIu64 "\n", plan.what.c_str(),
                elementTypeName(plan.type), shape.c_str(), plan.offset);
    std::ifstream file(plan.path, std::ios::binary);
    file.seekg(std::streamoff(plan.offset));
    if (!file.read(reinterpret_cast<char *>(bytes.data()), std::streamsize(bytes.size()))) {
      std::fprintf(stderr, "FAILED: '%s' does not hold the plan's bytes\n", plan.path.c_str());
      std::exit(3);
    }
  }
  const size_t size = elementSize(plan.type);
  double sum = 0;
  std::string first;
  for (int64_t i = 0; i < plan.count(); ++i) {
    double value = 0;
    const std::string text = elementText(plan.type, bytes.data() + size_t(i) * size, value);
    sum += value;
    if (i < 8)
      first += (i ? ", " : "") + text;
  }
  std::printf("values: count %" PRId64 ", sum %.17g, first [%s], fnv1a64 %016" PRIx64 "\n",
              plan.count(), sum, first.c_str(), fnv1a64(bytes));
}

bool parseType(const std::string &name, ElementType &type) {
  for (ElementType candidate :
       {ElementType::U8, ElementType::U16, ElementType::U32, ElementType::I32, ElementType::I64,
        ElementType::F32, ElementType::F64})
    if (name == elementTypeName(candidate)) {
      type = candidate;
      return true;
    }
  return false;
}

int usage() {
  std::fprintf(stderr, "usage: shardrt-test-data npy FILE | npz FILE MEMBER | safetensors FILE "
                       "TENSOR | idx FILE | tokens FILE TYPE | images FOLDER HEIGHT WIDTH C\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty())
    return usage();
  const std::string &format = args[0];
  try {
    if (format == "npy" && args.size() == 2) {
      printArray(openNpy(args[1]));
    } else if (format == "npz" && args.size() == 3) {
      printArray(openNpz(args[1], args[2]));
    } else if (format == "safetensors" && args.size() == 3) {
      printArray(openSafetensors(args[1], args[2]));
    } else if (format == "idx" && args.size() == 2) {
      printArray(openIdx(args[1]));
    } else if (format == "tokens" && args.size() == 3) {
      ElementType type;
      if (!parseType(args[2], type))
        return usage();
      printArray(openTokens(args[1], type));
    } else if (format == "images" && args.size() == 5) {
      const ImageFolderPlan plan =
          openImageFolder(args[1], std::atoll(args[2].c_str()), std::atoll(args[3].c_str()),
                          std::atoll(args[4].c_str()));
      std::string classes;
      for (const std::string &name : plan.classes)
        classes += (classes.empty() ? "" : ", ") + name;
      std::printf("classes: %s\n", classes.c_str());
      printArray(plan.images);
      printArray(plan.labels);
    } else {
      return usage();
    }
  } catch (const DataError &error) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
  return 0;
}
