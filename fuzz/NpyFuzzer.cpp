//===- NpyFuzzer.cpp - libFuzzer target: a NumPy .npy file ----------------===//
//
// Each input is a .npy file. Besides crashes, an accepted file whose elements
// do not end exactly at the end of the file is a bug (the reader promises it).
//
//===----------------------------------------------------------------------===//

#include "FuzzInput.h"

#include "../runtime/lib/data/array_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    shardrt::data::ArrayPlan plan =
        shardrt::data::openNpy(shardc::fuzz::writeFile("fuzz.npy", data, size));
    if (plan.produce || plan.offset > size || plan.bytes() != size - plan.offset)
      __builtin_trap();
  } catch (const shardrt::data::DataError &) {
  }
  return 0;
}
