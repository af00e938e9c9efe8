// The flags of a compiled program, as a table: parsing and --help both read it.
#include "driver_flags.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>

namespace shardrt {
namespace {

struct Flag {
  const char *name;
  const char *metavar; // nullptr: a switch, which takes no value
  const char *help;
  void (*apply)(DriverOptions &options, const char *flag, const std::string &value);
};

/// A decimal integer in [min, max]: strtoull alone would take "-1", " 7" and "7x".
uint64_t parseCount(const char *flag, const std::string &value, uint64_t min, uint64_t max) {
  bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
  errno = 0;
  unsigned long long parsed = digits ? std::strtoull(value.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE || parsed < min || parsed > max)
    throw UsageError(std::string(flag) + " needs an integer from " + std::to_string(min) + " to " +
                     std::to_string(max) + ", not '" + value + "'");
  return parsed;
}

int64_t parsePositive(const char *flag, const std::string &value) {
  return int64_t(parseCount(flag, value, 1, INT64_MAX));
}

/// A finite decimal number, above zero or at least zero.
double parseReal(const char *flag, const std::string &value, bool positive) {
  char *end = nullptr;
  errno = 0;
  double parsed = value.empty() || std::isspace(static_cast<unsigned char>(value[0]))
                      ? NAN
                      : std::strtod(value.c_str(), &end);
  if (std::isnan(parsed) || *end || errno == ERANGE || std::isinf(parsed) ||
      (positive ? parsed <= 0 : parsed < 0))
    throw UsageError(std::string(flag) + " needs a " + (positive ? "positive" : "non-negative") +
                     " number, not '" + value + "'");
  return parsed;
}

std::string parsePath(const char *flag, const std::string &value) {
  if (value.empty())
    throw UsageError(std::string(flag) + " needs a file name");
  return value;
}

/// `accuracy`, `accuracy:max`, `loss:min`. Without a direction a name ending in "loss"
/// is minimised and anything else maximised.
void parseBestMetric(DriverOptions &options, const char *flag, const std::string &value) {
  const size_t colon = value.rfind(':');
  std::string name = value.substr(0, colon);
  if (name.empty())
    throw UsageError(std::string(flag) + " needs an eval result's name, as in accuracy:max");
  if (colon == std::string::npos) {
    options.bestHigher = !(name.size() >= 4 && name.compare(name.size() - 4, 4, "loss") == 0);
  } else {
    const std::string direction = value.substr(colon + 1);
    if (direction != "max" && direction != "min")
      throw UsageError(std::string(flag) + ": the direction is max or min, not '" + direction + "'");
    options.bestHigher = direction == "max";
  }
  options.bestMetric = name;
}

void setMode(DriverOptions &options, Mode mode) {
  if (options.mode != Mode::Train && options.mode != mode)
    throw UsageError("--forward and --check-gradients are two modes; give one");
  options.mode = mode;
}

const Flag kFlags[] = {
    {"--seed", "N", "seed of the initialisers, shuffle and synthetic inputs (default 0)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.seed = parseCount(flag, v, 0, UINT64_MAX);
       o.seedGiven = true;
     }},
    {"--data", "DIR", "Fashion-MNIST's folder (default /usr/share/datasets/fashion-mnist)",
     [](DriverOptions &o, const char *flag, const std::string &v) { o.data = parsePath(flag, v); }},
    {"--epochs", "N", "train N epochs of floor(examples / batch) steps (default 1)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.epochs = parsePositive(flag, v);
     }},
    {"--steps", "N", "train N steps in all instead, maybe stopping inside an epoch",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.steps = parsePositive(flag, v);
     }},
    {"--metrics", "FILE", "write a JSON line per logged step and per evaluation to FILE",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.metrics = parsePath(flag, v);
     }},
    {"--log-every", "N", "metrics line and progress every N steps and the last (default 1)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.logEvery = parsePositive(flag, v);
     }},
    {"--no-eval", nullptr, "skip the evaluation on the test set after each epoch",
     [](DriverOptions &o, const char *, const std::string &) { o.eval = false; }},
    {"--checkpoint-dir", "DIR", "write checkpoints to DIR (ckpt-STEP.safetensors, best-STEP...)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.checkpointDir = parsePath(flag, v);
     }},
    {"--checkpoint-every", "N", "a checkpoint every N steps (default: after each epoch) and the last",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.checkpointEvery = parsePositive(flag, v);
     }},
    {"--checkpoint-seconds", "S", "a checkpoint when S seconds have passed since the last one",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.checkpointSeconds = parseReal(flag, v, true);
     }},
    {"--keep", "N", "checkpoints kept in each series, the newest (default 5)",
     [](DriverOptions &o, const char *flag, const std::string &v) { o.keep = parsePositive(flag, v); }},
    {"--best-metric", "NAME[:max|min]",
     "also keep the checkpoints that improve eval result NAME (default max; min for *loss)",
     [](DriverOptions &o, const char *flag, const std::string &v) { parseBestMetric(o, flag, v); }},
    {"--resume", "PATH", "continue from a checkpoint file, or the newest in a folder",
     [](DriverOptions &o, const char *flag, const std::string &v) { o.resume = parsePath(flag, v); }},
    {"--on-nonfinite", "stop|skip",
     "a step whose loss or gradients are not finite: stop (exit 3, the default) or skip its update",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       if (v != "stop" && v != "skip")
         throw UsageError(std::string(flag) + " is stop or skip, not '" + v + "'");
       o.skipNonFinite = v == "skip";
     }},
    {"--max-skips", "N", "--on-nonfinite skip: stop after N skipped steps in a row (default 10)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.maxSkips = parsePositive(flag, v);
     }},
    {"--collective-timeout", "S",
     "end the job (exit 4) when a collective has waited S seconds for a rank (default 600; "
     "0: never)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.collectiveTimeout = parseReal(flag, v, false);
     }},
    {"--skip-memory-check", nullptr,
     "start even when a rank needs more memory than the host offers it (the need counts "
     "every intermediate without reuse: an upper bound)",
     [](DriverOptions &o, const char *, const std::string &) { o.checkMemory = false; }},
    {"--forward", nullptr, "run the eval entry once on filled inputs and print its results",
     [](DriverOptions &o, const char *, const std::string &) { setMode(o, Mode::Forward); }},
    {"--values", "K", "--forward: leading values printed per result (default 8)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.values = int64_t(parseCount(flag, v, 0, INT64_MAX));
     }},
    {"--check-gradients", nullptr, "compare the grad entry with finite differences of its own loss",
     [](DriverOptions &o, const char *, const std::string &) { setMode(o, Mode::CheckGradients); }},
    {"--fd-samples", "K", "--check-gradients: elements checked per parameter (default 6)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.fdSamples = parsePositive(flag, v);
     }},
    {"--fd-eps", "X", "--check-gradients: central difference step (default 1e-2)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.fdEps = parseReal(flag, v, true);
     }},
    {"--fd-rtol", "X", "--check-gradients: relative tolerance (default 2e-2)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.fdRtol = parseReal(flag, v, false);
     }},
    {"--fd-atol", "X", "--check-gradients: absolute tolerance (default 1e-3)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.fdAtol = parseReal(flag, v, false);
     }},
    {"--output", "FILE", "write the final JSON to FILE (default: stdout)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.output = parsePath(flag, v);
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
  std::string text =
      std::string("usage: ") + program +
      " [flags]\n\n"
      "Trains the compiled program on every rank of its mesh (start it with mpirun -np\n"
      "<mesh size>): inputs marked as data read Fashion-MNIST, shuffled each epoch, and the\n"
      "test set is evaluated after each epoch. Progress goes to stderr, a JSON summary to\n"
      "stdout. --forward and --check-gradients run the program once instead.\n\n"
      "flags:\n";
  for (const Flag &flag : kFlags) {
    std::string left = std::string("  ") + flag.name;
    if (flag.metavar)
      left += std::string(" ") + flag.metavar;
    left.resize(std::max<size_t>(left.size() + 2, 22), ' ');
    text += left + flag.help + "\n";
  }
  return text;
}

} // namespace shardrt
