// Flat token files, nanoGPT's train.bin: the tokens back to back, little-endian, with no
// header; the whole file is the array, mapped as it is.
#include "reading.h"

namespace shardrt::data {

ArrayPlan openTokens(const std::string &path, ElementType type) {
  ArrayPlan plan;
  plan.what = quoted(path);
  plan.path = path;
  plan.type = type;
  if (type != ElementType::U8 && type != ElementType::U16 && type != ElementType::U32)
    fail(plan.what,
         std::string("tokens are uint8, uint16 or uint32, not ") + elementTypeName(type));
  const InputFile file(path);
  const uint64_t size = elementSize(type);
  if (file.size() == 0)
    fail(plan.what, "holds no tokens: the file is empty");
  if (file.size() % size != 0)
    fail(plan.what, "its " + std::to_string(file.size()) + " bytes are not a whole number of " +
                        elementTypeName(type) + " tokens (" + std::to_string(size) +
                        " bytes each)");
  plan.shape = {int64_t(file.size() / size)};
  return plan;
}

} // namespace shardrt::data
