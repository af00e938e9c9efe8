// The flags of a compiled program, as a table: parsing and --help both read it.
#include "driver_flags.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace shardrt {
namespace {

struct Flag {
  const char *name;
  const char *metavar; // nullptr: a switch, which takes no value
  const char *help;
  void (*apply)(DriverOptions &options, const char *flag, const std::string &value);
};

/// A decimal integer in [0, max]: strtoull alone would take "-1", " 7" and "7x".
uint64_t parseCount(const char *flag, const std::string &value, uint64_t max) {
  bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
  errno = 0;
  unsigned long long parsed = digits ? std::strtoull(value.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE || parsed > max)
    throw UsageError(std::string(flag) + " needs an integer from 0 to " + std::to_string(max) +
                     ", not '" + value + "'");
  return parsed;
}

const Flag kFlags[] = {
    {"--seed", "N", "seed of the parameter initialisers and input fills (default 0)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.seed = parseCount(flag, v, UINT64_MAX);
     }},
    {"--output", "FILE", "write the results JSON to FILE (default: stdout)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       if (v.empty())
         throw UsageError(std::string(flag) + " needs a file name");
       o.output = v;
     }},
    {"--values", "K", "how many leading values of each result to print (default 8)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.values = int64_t(parseCount(flag, v, INT64_MAX));
     }},
    {"--help", nullptr, "print this text and exit",
     [](DriverOptions &o, const char *, const std::string &) { o.help = true; }},
};

} // namespace

DriverOptions parseFlags(int argc, char **argv) {
  DriverOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    size_t eq = arg.find('=');
    std::string name = arg.substr(0, eq);
    const Flag *flag = nullptr;
    for (const Flag &candidate : kFlags)
      if (name == candidate.name)
        flag = &candidate;
    if (!flag)
      throw UsageError((arg.rfind("-", 0) == 0 ? "unknown flag '" : "unexpected argument '") + arg +
                       "' (see --help)");
    std::string value;
    if (!flag->metavar) {
      if (eq != std::string::npos)
        throw UsageError(std::string(flag->name) + " takes no value");
    } else if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw UsageError(std::string(flag->name) + " needs a value: " + flag->name + " " +
                       flag->metavar);
    }
    flag->apply(options, flag->name, value);
  }
  return options;
}

std::string usageText(const char *program) {
  std::string text = std::string("usage: ") + program +
                     " [flags]\n\n"
                     "Runs the compiled program once, forward, on every rank of its mesh (start\n"
                     "it with mpirun -np <mesh size>), and writes its results as JSON.\n\n"
                     "flags:\n";
  for (const Flag &flag : kFlags) {
    std::string left = std::string("  ") + flag.name;
    if (flag.metavar)
      left += std::string(" ") + flag.metavar;
    left.resize(std::max<size_t>(left.size() + 2, 18), ' ');
    text += left + flag.help + "\n";
  }
  return text;
}

} // namespace shardrt
