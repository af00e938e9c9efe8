//===- Bytes.cpp - sizes in bytes as people write them --------------------===//

#include "shardc/Support/Bytes.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace shardc;

std::string shardc::formatBytes(int64_t bytes) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = bytes;
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  std::string out;
  llvm::raw_string_ostream os(out);
  if (unit == 0)
    os << bytes << " B";
  else
    os << llvm::format("%.2f ", value) << units[unit];
  return out;
}

int64_t shardc::parseBytes(llvm::StringRef text) {
  uint64_t value = 0;
  llvm::StringRef rest = text;
  if (rest.consumeInteger(10, value))
    return -1;
  const llvm::StringRef units = "KMGT";
  const size_t unit = rest.empty() ? llvm::StringRef::npos : units.find(rest.front());
  int shift = unit == llvm::StringRef::npos ? 0 : 10 * int(unit + 1);
  if (unit != llvm::StringRef::npos)
    rest = rest.drop_front();
  if (!(rest.empty() || (shift && (rest == "iB" || rest == "B"))))
    return -1;
  if (value > (uint64_t(INT64_MAX) >> shift))
    return -1;
  return int64_t(value << shift);
}
