// The command line of a compiled program: one table of flags (driver_flags.cpp), so
// adding one (training will add many) is one row and one field here.
#ifndef SHARDRT_LIB_DRIVER_FLAGS_H
#define SHARDRT_LIB_DRIVER_FLAGS_H

#include <cstdint>
#include <stdexcept>
#include <string>

namespace shardrt {

struct DriverOptions {
  uint64_t seed = 0;  // of the parameter initialisers and input fills
  std::string output; // the results JSON; empty for stdout
  int64_t values = 8; // leading values printed per result
  bool help = false;
};

/// A bad command line; what() says what is wrong.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Parses argv[1..argc). Flags take their value as the next argument or after '='
/// (`--seed 3`, `--seed=3`). Throws UsageError.
DriverOptions parseFlags(int argc, char **argv);

/// The --help text.
std::string usageText(const char *program);

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_FLAGS_H
