//===- SafetensorsFuzzer.cpp - libFuzzer target: a safetensors file ------===//
//
// Each input is a safetensors file, read by both of the runtime's readers:
// the checkpoint reader (header checked whole, every tensor read and its
// checksum verified) and the data reader (one tensor, by the names the seeds
// use). Besides crashes, a plan whose bytes lie outside the file is a bug: the
// driver would map them.
//
//===----------------------------------------------------------------------===//

#include "FuzzInput.h"

#include "../runtime/lib/data/array_file.h"
#include "../runtime/lib/driver/checkpoint_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string path = shardc::fuzz::writeFile("fuzz.safetensors", data, size);
  try {
    shardrt::CheckpointReader reader(path);
    for (const shardrt::StoredTensor &tensor : reader.tensors())
      reader.read(tensor);
  } catch (const shardrt::CheckpointError &) {
  }
  for (const char *name : {"x", "u8", "i32", "i64", "f32", "f64", "half", "step"}) {
    try {
      shardrt::data::ArrayPlan plan = shardrt::data::openSafetensors(path, name);
      if (plan.produce || plan.offset > size || plan.bytes() > size - plan.offset)
        __builtin_trap();
    } catch (const shardrt::data::DataError &) {
    }
  }
  return 0;
}
