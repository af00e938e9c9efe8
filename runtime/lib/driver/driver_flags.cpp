// The settings of a run, as a table: the run configuration, the flags, --help and the
// effective configuration all read it.
//
//  1. `--config FILE` is found first, wherever it stands: the file's keys are applied,
//     each through its setting's own parser (a JSON value of another type than the
//     flag takes is an error that names both).
//  2. The flags follow, in order: a flag overrides the configuration; `--data` and
//     `--eval-data` add or replace one input's binding.
//  3. The effective configuration is written back from the options by each row's
//     reader, defaults included, so it is exactly what the run used.
#include "driver_flags.h"
#include "driver_bindings.h"
#include "driver_stop.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace shardrt {
namespace {

using json = nlohmann::json;

/// What a setting's value is, in JSON: it decides which JSON type the configuration
/// may give it.
enum class Kind { Switch, Integer, Real, Text, Bindings };

struct Flag {
  const char *name;
  const char *metavar; // nullptr: a switch, which takes no value
  Kind kind;
  bool inConfig; // false: a flag only (--config, --eval-data, --help)
  const char *help;
  void (*apply)(DriverOptions &options, const char *flag, const std::string &value);
  json (*read)(const DriverOptions &options); // the effective value; unused when !inConfig
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

/// Whether `value`, one of a flag's two words, is the second (`first` is the default).
bool isSecondOf(const char *flag, const std::string &value, const char *first, const char *second) {
  if (value != first && value != second)
    throw UsageError(std::string(flag) + " is " + first + " or " + second + ", not '" + value +
                     "'");
  return value == second;
}

shardrt_prefetch prefetchWhen(const char *flag, const std::string &value) {
  if (value == "auto")
    return SHARDRT_PREFETCH_ACROSS_HOSTS;
  if (value == "on")
    return SHARDRT_PREFETCH_ON;
  if (value == "off")
    return SHARDRT_PREFETCH_OFF;
  throw UsageError(std::string(flag) + " is auto, on or off, not '" + value + "'");
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
      throw UsageError(std::string(flag) + ": the direction is max or min, not '" + direction +
                       "'");
    options.bestHigher = direction == "max";
  }
  options.bestMetric = name;
}

void setMode(DriverOptions &options, Mode mode) {
  if (options.mode != Mode::Train && options.mode != mode)
    throw UsageError("--evaluate, --forward, --check-gradients, --generate and --from-metrics "
                     "are modes; give one");
  options.mode = mode;
}

/// `--data NAME=SOURCE`: one input's binding, into `bindings`.
void parseBindingFlag(std::map<std::string, Binding> &bindings, const char *flag,
                      const std::string &value) {
  const size_t eq = value.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == value.size())
    throw UsageError(std::string(flag) + " binds an input: " + flag +
                     " NAME=PATH[#FIELD] or NAME=synthetic, not '" + value + "'");
  const std::string name = value.substr(0, eq);
  bindings[name] = bindingFromText(value.substr(eq + 1), std::string(flag) + " " + value, "");
}

json optionalText(const std::string &text) { return text.empty() ? json(nullptr) : json(text); }

const Flag kFlags[] = {
    {"--config", "FILE", Kind::Text, false,
     "read the run configuration (JSON: these settings as keys, and \"data\") from FILE; "
     "flags override it",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.config = parsePath(flag, v);
     },
     nullptr},
    {"--data", "NAME=SOURCE", Kind::Bindings, true,
     "train input NAME on SOURCE: PATH[#FIELD] (.npy, .npz, .safetensors, IDX, an image "
     "folder, tokens) or synthetic",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       parseBindingFlag(o.data.train, flag, v);
     },
     [](const DriverOptions &o) { return bindingsJson(o.data); }},
    {"--eval-data", "NAME=SOURCE", Kind::Bindings, false,
     "evaluate with input NAME read from SOURCE (the configuration's data.eval)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       parseBindingFlag(o.data.eval, flag, v);
     },
     nullptr},
    {"--synthetic", nullptr, Kind::Switch, true,
     "inputs bound to no data get synthetic numbers (benchmarks; otherwise an error)",
     [](DriverOptions &o, const char *, const std::string &) { o.data.synthetic = true; },
     [](const DriverOptions &o) { return json(o.data.synthetic); }},
    {"--seed", "N", Kind::Integer, true,
     "seed of the initialisers, shuffle and synthetic inputs (default 0)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.seed = parseCount(flag, v, 0, UINT64_MAX);
       o.seedGiven = true;
     },
     [](const DriverOptions &o) { return json(o.seed); }},
    {"--epochs", "N", Kind::Integer, true,
     "train N epochs of floor(examples / batch) steps (default 1)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.epochs = parsePositive(flag, v);
     },
     [](const DriverOptions &o) { return json(o.epochs); }},
    {"--steps", "N", Kind::Integer, true,
     "train N steps in all instead, maybe stopping inside an epoch",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.steps = parsePositive(flag, v);
     },
     [](const DriverOptions &o) { return o.steps ? json(o.steps) : json(nullptr); }},
    {"--no-prefetch", nullptr, Kind::Switch, true,
     "load each batch when its step starts, not while the step before runs",
     [](DriverOptions &o, const char *, const std::string &) { o.prefetch = false; },
     [](const DriverOptions &o) { return json(!o.prefetch); }},
    {"--metrics", "FILE", Kind::Text, true,
     "write a JSON line per logged step and per evaluation to FILE",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.metrics = parsePath(flag, v);
     },
     [](const DriverOptions &o) { return optionalText(o.metrics); }},
    {"--report-page", "FILE", Kind::Text, true,
     "write the run's report page to FILE: curves, plan, memory, each parameter's layout "
     "(HTML, self-contained)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.reportPage = parsePath(flag, v);
     },
     [](const DriverOptions &o) { return optionalText(o.reportPage); }},
    {"--from-metrics", "FILE", Kind::Text, false,
     "--report-page: make the page from the metrics file FILE, without running",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       setMode(o, Mode::Page);
       o.fromMetrics = parsePath(flag, v);
     },
     nullptr},
    {"--log-every", "N", Kind::Integer, true,
     "metrics line and progress every N steps and the last (default 1)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.logEvery = parsePositive(flag, v);
     },
     [](const DriverOptions &o) { return json(o.logEvery); }},
    {"--log-interval", "X", Kind::Real, true,
     "rank 0 logs progress to stderr every X seconds, or steps (default 10)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.logInterval = parseReal(flag, v, true);
     },
     [](const DriverOptions &o) { return json(o.logInterval); }},
    {"--log-interval-type", "secs|steps", Kind::Text, true,
     "what --log-interval counts (default secs)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.logIntervalInSteps = isSecondOf(flag, v, "secs", "steps");
     },
     [](const DriverOptions &o) { return json(o.logIntervalInSteps ? "steps" : "secs"); }},
    {"--no-eval", nullptr, Kind::Switch, true, "skip the evaluation after each epoch",
     [](DriverOptions &o, const char *, const std::string &) { o.eval = false; },
     [](const DriverOptions &o) { return json(!o.eval); }},
    {"--eval-every", "N", Kind::Integer, true,
     "also evaluate every N steps (default: after each epoch only)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.evalEvery = parsePositive(flag, v);
     },
     [](const DriverOptions &o) { return o.evalEvery ? json(o.evalEvery) : json(nullptr); }},
    {"--evaluate", "PATH", Kind::Text, true,
     "an eval job: evaluate the checkpoint PATH, or the newest in the folder PATH, on this "
     "program's mesh, without training",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       setMode(o, Mode::Evaluate);
       o.evaluate = parsePath(flag, v);
     },
     [](const DriverOptions &o) { return optionalText(o.evaluate); }},
    {"--poll", "S", Kind::Real, true,
     "--evaluate on a folder: then wait for newer checkpoints, looking every S seconds, "
     "until the one of the run's last step (--epochs, --steps) or a stop signal",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.poll = parseReal(flag, v, true);
     },
     [](const DriverOptions &o) { return o.poll > 0 ? json(o.poll) : json(nullptr); }},
    {"--checkpoint-dir", "DIR", Kind::Text, true,
     "write checkpoints to DIR (ckpt-STEP.safetensors, best-STEP...)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.checkpointDir = parsePath(flag, v);
     },
     [](const DriverOptions &o) { return optionalText(o.checkpointDir); }},
    {"--checkpoint-every", "N", Kind::Integer, true,
     "a checkpoint every N steps (default: after each epoch) and the last",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.checkpointEvery = parsePositive(flag, v);
     },
     [](const DriverOptions &o) {
       return o.checkpointEvery ? json(o.checkpointEvery) : json(nullptr);
     }},
    {"--checkpoint-seconds", "S", Kind::Real, true,
     "a checkpoint when S seconds have passed since the last one",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.checkpointSeconds = parseReal(flag, v, true);
     },
     [](const DriverOptions &o) {
       return o.checkpointSeconds > 0 ? json(o.checkpointSeconds) : json(nullptr);
     }},
    {"--keep", "N", Kind::Integer, true, "checkpoints kept in each series, the newest (default 5)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.keep = parsePositive(flag, v);
     },
     [](const DriverOptions &o) { return json(o.keep); }},
    {"--best-metric", "NAME[:max|min]", Kind::Text, true,
     "also keep the checkpoints that improve eval result NAME (default max; min for *loss)",
     [](DriverOptions &o, const char *flag, const std::string &v) { parseBestMetric(o, flag, v); },
     [](const DriverOptions &o) {
       return o.bestMetric.empty() ? json(nullptr)
                                   : json(o.bestMetric + (o.bestHigher ? ":max" : ":min"));
     }},
    {"--resume", "PATH", Kind::Text, true,
     "continue from a checkpoint file, or the newest in a folder",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.resume = parsePath(flag, v);
     },
     [](const DriverOptions &o) { return optionalText(o.resume); }},
    {"--on-nonfinite", "stop|skip", Kind::Text, true,
     "a step whose loss or gradients are not finite: stop (exit 3, the default) or skip its update",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.skipNonFinite = isSecondOf(flag, v, "stop", "skip");
     },
     [](const DriverOptions &o) { return json(o.skipNonFinite ? "skip" : "stop"); }},
    {"--max-skips", "N", Kind::Integer, true,
     "--on-nonfinite skip: stop after N skipped steps in a row (default 10)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.maxSkips = parsePositive(flag, v);
     },
     [](const DriverOptions &o) { return json(o.maxSkips); }},
    {"--collective-timeout", "S", Kind::Real, true,
     "end the job (exit 4) when a collective has waited S seconds for a rank (default 600; "
     "0: never)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.collectiveTimeout = parseReal(flag, v, false);
     },
     [](const DriverOptions &o) { return json(o.collectiveTimeout); }},
    {"--checkpoint-signal", "NAME", Kind::Text, true,
     "the early-warning signal (Slurm's --signal): finish the step in progress, checkpoint, "
     "stop (default USR1; none: not caught); SIGINT and SIGTERM stop too (driver_stop.h)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       const int signal = checkpointSignalNamed(v);
       if (signal < 0)
         throw UsageError(std::string(flag) + " is one of " + checkpointSignalNames() + ", not '" +
                          v + "'");
       o.checkpointSignal = signal;
     },
     [](const DriverOptions &o) {
       return o.checkpointSignal ? json(stopSignalName(o.checkpointSignal) + 3) : json("none");
     }},
    {"--matmul-precision", "f32|bf16", Kind::Text, true,
     "bf16: every matrix product (matmuls, convolutions) rounds its operands to bfloat16 "
     "and accumulates in f32 (oneDNN); f32 (the default): in f32 (OpenBLAS; oneDNN for thin ones)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.matmulBf16 = isSecondOf(flag, v, "f32", "bf16");
     },
     [](const DriverOptions &o) { return json(o.matmulBf16 ? "bf16" : "f32"); }},
    {"--reduce-precision", "f32|bf16", Kind::Text, true,
     "bf16: the parameters' gradients are sent in bfloat16 when they are reduced across "
     "ranks (all-reduce, reduce-scatter: half the bytes), summed in f32 by the rank that "
     "keeps each block; f32 (the default): in f32. Every other collective stays f32",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.gradientsBf16 = isSecondOf(flag, v, "f32", "bf16");
     },
     [](const DriverOptions &o) { return json(o.gradientsBf16 ? "bf16" : "f32"); }},
    {"--overlap-gradients", "on|off", Kind::Text, true,
     "on: each parameter's gradient all-reduce or reduce-scatter starts as soon as the "
     "gradient exists and the step waits for it only where the sum is read, so that the "
     "rest of the backward pass runs meanwhile (PyTorch DDP's overlap; it pays for large "
     "gradients over a slow link); off (the default): each waits at once",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.overlapGradients = isSecondOf(flag, v, "off", "on");
     },
     [](const DriverOptions &o) { return json(o.overlapGradients ? "on" : "off"); }},
    {"--prefetch-weights", "auto|on|off", Kind::Text, true,
     "on: under FSDP each parameter's all-gather starts before the op that reads the weight "
     "before it and travels while that op computes (PyTorch FSDP's prefetch); auto (the "
     "default): where the ranks that gather it are on more than one host; off: each "
     "gathers where it starts",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.prefetchWeights = prefetchWhen(flag, v);
     },
     [](const DriverOptions &o) {
       const char *names[] = {"off", "auto", "on"};
       return json(names[o.prefetchWeights]);
     }},
    {"--skip-memory-check", nullptr, Kind::Switch, true,
     "start even when a rank needs more memory than the host offers it (the need counts "
     "every intermediate without reuse: an upper bound)",
     [](DriverOptions &o, const char *, const std::string &) { o.checkMemory = false; },
     [](const DriverOptions &o) { return json(!o.checkMemory); }},
    {"--forward", nullptr, Kind::Switch, true,
     "run the eval entry once on synthetic inputs and print its results",
     [](DriverOptions &o, const char *, const std::string &) { setMode(o, Mode::Forward); },
     [](const DriverOptions &o) { return json(o.mode == Mode::Forward); }},
    {"--values", "K", Kind::Integer, true,
     "--forward: leading values printed per result (default 8)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.values = int64_t(parseCount(flag, v, 0, INT64_MAX));
     },
     [](const DriverOptions &o) { return json(o.values); }},
    {"--generate", nullptr, Kind::Switch, true,
     "sample text from the checkpoint --resume names: the model's `generate INPUT ~ LOGITS` "
     "filled one token at a time after --prompt, printed as it comes",
     [](DriverOptions &o, const char *, const std::string &) { setMode(o, Mode::Generate); },
     [](const DriverOptions &o) { return json(o.mode == Mode::Generate); }},
    {"--prompt", "TEXT", Kind::Text, true, "--generate: the text the samples continue",
     [](DriverOptions &o, const char *, const std::string &v) { o.prompt = v; },
     [](const DriverOptions &o) { return optionalText(o.prompt); }},
    {"--prompt-file", "FILE", Kind::Text, true, "--generate: the prompt is FILE's bytes",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.promptFile = parsePath(flag, v);
     },
     [](const DriverOptions &o) { return optionalText(o.promptFile); }},
    {"--max-tokens", "N", Kind::Integer, true,
     "--generate: new tokens per sample (default: up to the model's context)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.maxTokens = parsePositive(flag, v);
     },
     [](const DriverOptions &o) { return o.maxTokens ? json(o.maxTokens) : json(nullptr); }},
    {"--temperature", "T", Kind::Real, true,
     "--generate: divide the logits by T before sampling (default 1; 0: the most likely token)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.temperature = parseReal(flag, v, false);
     },
     [](const DriverOptions &o) { return json(o.temperature); }},
    {"--top-k", "K", Kind::Integer, true,
     "--generate: sample among the K most likely tokens only (default: all)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.topK = parsePositive(flag, v);
     },
     [](const DriverOptions &o) { return o.topK ? json(o.topK) : json(nullptr); }},
    {"--top-p", "P", Kind::Real, true,
     "--generate: sample among the most likely tokens whose probabilities add up to P "
     "(nucleus sampling; default 1: all)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.topP = parseReal(flag, v, true);
       if (o.topP > 1)
         throw UsageError(std::string(flag) + " needs a number in (0, 1], not '" + v + "'");
     },
     [](const DriverOptions &o) { return json(o.topP); }},
    {"--samples", "N", Kind::Integer, true,
     "--generate: samples drawn side by side, in one batch (default 1)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.samples = parsePositive(flag, v);
     },
     [](const DriverOptions &o) { return json(o.samples); }},
    {"--logits", "FILE", Kind::Text, true,
     "--generate: write the logits of the final tokens, f32 [samples, tokens, vocabulary], "
     "to FILE (.npy)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.logits = parsePath(flag, v);
     },
     [](const DriverOptions &o) { return optionalText(o.logits); }},
    {"--recompute", nullptr, Kind::Switch, true,
     "--generate: compute each token from the whole prefix (the eval entry) instead of the "
     "decode step's KV cache",
     [](DriverOptions &o, const char *, const std::string &) { o.recompute = true; },
     [](const DriverOptions &o) { return json(o.recompute); }},
    {"--check-gradients", nullptr, Kind::Switch, true,
     "compare the grad entry with finite differences of its own loss (synthetic inputs)",
     [](DriverOptions &o, const char *, const std::string &) { setMode(o, Mode::CheckGradients); },
     [](const DriverOptions &o) { return json(o.mode == Mode::CheckGradients); }},
    {"--fd-samples", "K", Kind::Integer, true,
     "--check-gradients: elements checked per parameter (default 6)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.fdSamples = parsePositive(flag, v);
     },
     [](const DriverOptions &o) { return json(o.fdSamples); }},
    {"--fd-eps", "X", Kind::Real, true, "--check-gradients: central difference step (default 1e-2)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.fdEps = parseReal(flag, v, true);
     },
     [](const DriverOptions &o) { return json(o.fdEps); }},
    {"--fd-rtol", "X", Kind::Real, true, "--check-gradients: relative tolerance (default 2e-2)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.fdRtol = parseReal(flag, v, false);
     },
     [](const DriverOptions &o) { return json(o.fdRtol); }},
    {"--fd-atol", "X", Kind::Real, true, "--check-gradients: absolute tolerance (default 1e-3)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.fdAtol = parseReal(flag, v, false);
     },
     [](const DriverOptions &o) { return json(o.fdAtol); }},
    {"--output", "FILE", Kind::Text, true, "write the final JSON to FILE (default: stdout)",
     [](DriverOptions &o, const char *flag, const std::string &v) {
       o.output = parsePath(flag, v);
     },
     [](const DriverOptions &o) { return optionalText(o.output); }},
    {"--help", nullptr, Kind::Switch, false, "print this text and exit",
     [](DriverOptions &o, const char *, const std::string &) { o.help = true; }, nullptr},
};

/// `--checkpoint-dir` -> "checkpoint_dir".
std::string configKey(const Flag &flag) {
  std::string key = flag.name + 2;
  std::replace(key.begin(), key.end(), '-', '_');
  return key;
}

const Flag *findFlag(const std::string &name) {
  for (const Flag &candidate : kFlags)
    if (name == candidate.name)
      return &candidate;
  return nullptr;
}

const char *kindText(Kind kind) {
  switch (kind) {
  case Kind::Switch:
    return "true or false";
  case Kind::Integer:
    return "an integer";
  case Kind::Real:
    return "a number";
  case Kind::Text:
    return "a string";
  case Kind::Bindings:
    return "an object";
  }
  return "";
}

/// A JSON value as its flag's text, when it has the type the flag takes.
std::optional<std::string> flagText(const json &value, Kind kind) {
  switch (kind) {
  case Kind::Integer:
    if (value.is_number_unsigned())
      return std::to_string(value.get<uint64_t>());
    if (value.is_number_integer())
      return std::to_string(value.get<int64_t>());
    return std::nullopt;
  case Kind::Real:
    if (!value.is_number())
      return std::nullopt;
    return value.dump();
  case Kind::Text:
    if (!value.is_string())
      return std::nullopt;
    return value.get<std::string>();
  case Kind::Switch:
  case Kind::Bindings:
    return std::nullopt;
  }
  return std::nullopt;
}

/// The folder part of `path` with its slash ("cfg/" for "cfg/run.json"), or "".
std::string folderOf(const std::string &path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

/// The settings of a configuration's object, `source` naming it in messages ("'run.json'")
/// and `folder` the one its relative data paths start from.
void applySettings(DriverOptions &options, const json &config, const std::string &source,
                   const std::string &folder) {
  std::vector<std::string> keys;
  for (const Flag &flag : kFlags)
    if (flag.inConfig)
      keys.push_back(configKey(flag));
  for (const auto &[key, value] : config.items()) {
    const Flag *flag = nullptr;
    for (const Flag &candidate : kFlags)
      if (candidate.inConfig && configKey(candidate) == key)
        flag = &candidate;
    const std::string where = source + ": '" + key + "'";
    if (!flag)
      throw UsageError(where + " is not a setting" + didYouMean(key, keys));
    if (value.is_null())
      continue; // the default, as the effective configuration writes it
    const std::string mismatch = where + " is " + std::string(kindText(flag->kind)) + " as " +
                                 flag->name + " takes it, not " + value.dump();
    if (flag->kind == Kind::Bindings) {
      if (!value.is_object())
        throw UsageError(mismatch);
      bindingsFromJson(options.data, value, source + ": data", folder);
    } else if (flag->kind == Kind::Switch) {
      if (!value.is_boolean())
        throw UsageError(mismatch);
      if (value.get<bool>())
        flag->apply(options, flag->name, "");
    } else {
      std::optional<std::string> text = flagText(value, flag->kind);
      if (!text)
        throw UsageError(mismatch);
      flag->apply(options, flag->name, *text);
    }
  }
}

void applyConfig(DriverOptions &options, const std::string &path) {
  std::ifstream file(path);
  if (!file)
    throw UsageError("--config: cannot read '" + path + "': " + std::strerror(errno));
  std::stringstream text;
  text << file.rdbuf();
  json config;
  try {
    config = json::parse(text.str());
  } catch (const json::parse_error &error) {
    throw UsageError("--config: '" + path + "' is not valid JSON: " + error.what());
  }
  if (!config.is_object())
    throw UsageError("--config: '" + path + "' holds " + std::string(config.type_name()) +
                     ", not an object of settings");
  applySettings(options, config, "'" + path + "'", folderOf(path));
}

} // namespace

DriverOptions parseSettings(int argc, char **argv, const std::string &compiled) {
  // Split the command line into (flag, value) pairs first, so that --config applies
  // before every flag wherever it stands.
  std::vector<std::pair<const Flag *, std::string>> given;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    size_t eq = arg.find('=');
    const Flag *flag = findFlag(arg.substr(0, eq));
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
    given.emplace_back(flag, value);
  }
  DriverOptions options;
  if (!compiled.empty())
    applySettings(options, json::parse(compiled), "the program's compiled settings", "");
  const Flag *config = findFlag("--config");
  for (const auto &[flag, value] : given)
    if (flag == config)
      flag->apply(options, flag->name, value);
  if (!options.config.empty())
    applyConfig(options, options.config);
  for (const auto &[flag, value] : given)
    if (flag != config)
      flag->apply(options, flag->name, value);
  for (const Flag &flag : kFlags)
    if (flag.inConfig)
      options.effective[configKey(flag)] = flag.read(options);
  return options;
}

std::string usageText(const char *program) {
  std::string text =
      std::string("usage: ") + program +
      " [--config FILE] [flags]\n\n"
      "Trains the compiled program on every rank of its mesh (start it with mpirun -np\n"
      "<mesh size>). Every input is bound to its data: a file or folder for training\n"
      "(--data, or \"data\": {\"train\": ...} in the configuration) and for the evaluation\n"
      "after each epoch (--eval-data, \"data\": {\"eval\": ...}), or synthetic numbers.\n"
      "Progress goes to stderr, a JSON summary to stdout. --evaluate evaluates checkpoints\n"
      "instead (an eval job); --forward and --check-gradients run the program once on\n"
      "synthetic inputs; --generate samples text from a checkpoint (the JSON summary to\n"
      "--output only); --from-metrics makes the report page of a finished run. A\n"
      "configuration key is a flag without its dashes, '-' as '_' (\"log_every\": 10).\n\n"
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

std::string didYouMean(const std::string &name, const std::vector<std::string> &known) {
  // Levenshtein distance, one row at a time.
  auto distance = [](const std::string &a, const std::string &b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
      row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diagonal = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
        diagonal = up;
      }
    }
    return row[b.size()];
  };
  const std::string *best = nullptr;
  size_t bestDistance = SIZE_MAX;
  for (const std::string &candidate : known) {
    size_t d = distance(name, candidate);
    if (d < bestDistance) {
      bestDistance = d;
      best = &candidate;
    }
  }
  // Close enough to be a typo: two edits, or a third of a longer name.
  if (!best || bestDistance > std::max<size_t>(2, name.size() / 3) || bestDistance >= name.size())
    return "";
  return " (did you mean '" + *best + "'?)";
}

} // namespace shardrt
