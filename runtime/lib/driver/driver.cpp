// shardrt_main: the `main` of a compiled program.
//
//  1. MPI comes up first, so that errors every rank sees alike (flags, manifest) are
//     printed once, by rank 0, and every rank leaves with the same status.
//  2. The settings (run configuration and flags), the manifest, the data each input is
//     bound to (the files' headers: shapes, types, example counts) and what the mode
//     needs of the manifest and the entries are checked completely before the mesh is
//     set up.
//  3. shardrt_init sets up the manifest's mesh (and stops if mpirun started another
//     number of ranks); rank 0 opens the output now, so a bad path fails before the run.
//  4. The mode runs: training (the default), --forward or --check-gradients
//     (driver_modes.h); each allocates this rank's blocks once and fills them by global
//     element index, so every mesh starts from the same numbers.
#include "collectives/watchdog.h"
#include "driver_bindings.h"
#include "driver_checkpoint.h"
#include "driver_flags.h"
#include "driver_layout.h"
#include "driver_manifest.h"
#include "driver_modes.h"
#include "driver_output.h"
#include "driver_page.h"
#include "host/cpu_features.h"
#include "host/host.h"
#include "kernels/dnnl_matmul.h"
#include "memory/scratch.h"
#include "mesh/mesh.h"

#include "shardrt/driver.h"
#include "shardrt/shardrt.h"

#include <climits>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace shardrt {
namespace {

struct Entries {
  shardrt_entry_fn train, eval, grad, prefill, decode;
};

/// An error in what the mode needs of the program: its exit status and message.
struct Refusal {
  int status = 0; // 0: none
  std::string message;
};

/// --best-metric names a per-example eval result, and there are evaluations.
Refusal checkBestMetric(const Manifest &manifest, const DriverOptions &options) {
  if (!manifest.batch || !options.eval)
    return {2, "--best-metric needs the evaluations on the test set, and " +
                   (manifest.batch ? std::string("--no-eval turns them off")
                                   : manifest.model + " reads no data")};
  std::string known;
  for (const TensorSpec &result : manifest.evalResults)
    if (result.perExample) {
      if (result.name == options.bestMetric)
        return {};
      known += (known.empty() ? "" : ", ") + result.name;
    }
  return {2, "--best-metric: " + manifest.model + " has no eval metric '" + options.bestMetric +
                 "' (it has: " + known + ")"};
}

/// The entries the ABI always has, a train entry exactly with an optimizer, and what
/// the mode needs: an optimizer to train, epochs or --steps, a loss to differentiate.
Refusal checkProgram(const Manifest &manifest, const DriverOptions &options, Entries entries) {
  const std::string &model = manifest.model;
  if (!entries.eval || !entries.grad)
    return {1, std::string("shardrt_main was given no ") + (entries.eval ? "grad" : "eval") +
                   " entry"};
  if (manifest.hasOptimizer && !entries.train)
    return {1, "the manifest has the optimizer '" + manifest.optimizer +
                   "', but shardrt_main was given no train entry"};
  if (!manifest.hasOptimizer && entries.train)
    return {1, "shardrt_main was given a train entry, but the manifest has no optimizer"};
  const bool generationEntries = entries.prefill && entries.decode;
  if (manifest.generation.present != generationEntries ||
      bool(entries.prefill) != bool(entries.decode))
    return {1, manifest.generation.present
                   ? "the manifest has prefill and decode steps, but shardrt_main was not given "
                     "both entries"
                   : "shardrt_main was given a prefill or decode entry, but the manifest has no "
                     "such step"};
  if (options.mode == Mode::Train && !manifest.hasOptimizer)
    return {1, model + " has no optimizer, so it does not train; run it with --forward or "
                       "--check-gradients"};
  if (options.mode == Mode::Train && !manifest.batch && !options.steps)
    return {2, model + " reads no data (its inputs are synthetic), so it has no epochs: give "
                       "--steps N"};
  if (options.mode == Mode::Evaluate && (!options.eval || !manifest.batch))
    return {2, "--evaluate needs the eval data (\"data\": {\"eval\": ...} or --eval-data)"};
  if (options.poll > 0 && options.mode != Mode::Evaluate)
    return {2, "--poll goes with --evaluate"};
  const bool checkpoints = !options.checkpointDir.empty();
  const bool generates = options.mode == Mode::Generate;
  if (options.mode != Mode::Train && (checkpoints || (!options.resume.empty() && !generates)))
    return {2, "--checkpoint-dir and --resume go with training (and --resume with --generate), "
               "not --forward or --check-gradients"};
  if (generates && manifest.generateInput < 0)
    return {1, model + " declares nothing to generate: --generate needs `generate INPUT ~ "
                       "LOGITS` in its model (examples/gpt/gpt.shard has one)"};
  if (generates && options.resume.empty())
    return {2, "--generate samples from a trained model: give its checkpoint, --resume PATH "
               "(a file, or a folder's newest)"};
  if (!generates && (!options.prompt.empty() || !options.promptFile.empty() || options.maxTokens ||
                     options.topK || options.topP != 1 || options.temperature != 1 ||
                     options.samples != 1 || !options.logits.empty() || options.recompute))
    return {2, "--prompt, --prompt-file, --max-tokens, --temperature, --top-k, --top-p, "
               "--samples, --logits and --recompute go with --generate"};
  if (!checkpoints &&
      (options.checkpointEvery || options.checkpointSeconds > 0 || !options.bestMetric.empty()))
    return {2, "--checkpoint-every, --checkpoint-seconds and --best-metric need --checkpoint-dir"};
  if (!options.bestMetric.empty()) {
    Refusal refusal = checkBestMetric(manifest, options);
    if (refusal.status)
      return refusal;
  }
  if (options.mode == Mode::CheckGradients) {
    const TensorSpec *loss = nullptr;
    for (const TensorSpec &result : manifest.evalResults)
      loss = result.name == "loss" ? &result : loss;
    if (!loss)
      return {1, "--check-gradients differentiates the eval result 'loss', and " + model +
                     " has none"};
    if (!loss->perExample && (loss->dtype != DType::F32 || !loss->shape.empty()))
      return {1, "--check-gradients needs the eval result 'loss' as an f32 scalar or "
                 "per_example"};
  }
  return {};
}

/// Whether every rank's host offers it what the program needs: room for OpenBLAS's
/// work buffer, claimed now, for the runtime's scratch buffer at its planned size, mapped
/// now, and (when `checkNeed`) the manifest's memory per rank. The first rank short of it
/// says both figures. Collective.
bool memoryFits(const Manifest &manifest, bool checkNeed) {
  const int localRanks = ranksOnThisHost();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const bool blasReady = claimBlasWorkBuffer();
  // Mapped at the size shardc planned, so that no step grows it (its pages are
  // touched by the first call that uses them).
  const bool scratchReady =
      manifest.scratchBytes == 0 || scratch().tryReserve(size_t(manifest.scratchBytes));
  const MemoryOffer offer = memoryOffer(localRanks);
  const int64_t need = manifest.memoryPerRank;
  int firstShort =
      !blasReady || !scratchReady || (checkNeed && need > offer.bytes()) ? rank : INT_MAX;
  watchedWorld("all_reduce of the memory check", [&](MPI_Request *request) {
    MPI_Iallreduce(MPI_IN_PLACE, &firstShort, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, request);
  });
  if (firstShort != rank)
    return firstShort == INT_MAX;
  const std::string limit =
      offer.addressSpaceLeft < 0
          ? ""
          : "; the address-space limit (ulimit -v) leaves it " + bytesText(offer.addressSpaceLeft);
  if (!blasReady)
    std::fprintf(stderr,
                 "shardrt: error: rank %d cannot allocate OpenBLAS's work buffer of %s (%s of "
                 "memory shared by %d ranks%s): raise the limit\n",
                 rank, bytesText(blasWorkBufferBytes()).c_str(), bytesText(offer.physical).c_str(),
                 localRanks, limit.c_str());
  else if (!scratchReady)
    std::fprintf(stderr,
                 "shardrt: error: rank %d cannot map the runtime's scratch buffer of %s (%s of "
                 "memory shared by %d ranks%s): raise the limit\n",
                 rank, bytesText(manifest.scratchBytes).c_str(), bytesText(offer.physical).c_str(),
                 localRanks, limit.c_str());
  else
    std::fprintf(stderr,
                 "shardrt: error: %s needs %s per rank (parameters and optimizer state, "
                 "inputs, the largest of the steps' planned arenas, the runtime's "
                 "scratch buffer, oneDNN's convolution buffers and code, and the process "
                 "itself, as shardc's --report counts them), and rank %d's host offers it %s "
                 "(%s of memory shared by %d ranks%s): give it a smaller batch or more ranks "
                 "(--skip-memory-check starts "
                 "anyway)\n",
                 manifest.model.c_str(), bytesText(need).c_str(), rank,
                 bytesText(offer.bytes()).c_str(), bytesText(offer.physical).c_str(), localRanks,
                 limit.c_str());
  return false;
}

/// Whether every rank's CPU has the instruction set features the program's code was
/// compiled for (the manifest's target): checked before any of that code runs, which
/// would die of SIGILL mid-step. The first rank short of some names them and its host.
/// Collective, before the mesh (the runtime itself is compiled for plain x86-64).
bool cpuFits(const Manifest &manifest, int rank) {
  const std::vector<std::string> missing = missingCpuFeatures(manifest.targetFeatures);
  int firstShort = missing.empty() ? INT_MAX : rank;
  MPI_Allreduce(MPI_IN_PLACE, &firstShort, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (firstShort != rank)
    return firstShort == INT_MAX;
  std::string names;
  for (const std::string &name : missing)
    names += (names.empty() ? "" : ", ") + name;
  std::fprintf(stderr,
               "shardrt: error: host %s lacks CPU features this program was built for: %s "
               "(target %s): rebuild with shardc --target-cpu %s (or a CPU all hosts have)\n",
               hostName().c_str(), names.c_str(), manifest.targetCpu.c_str(),
               cpuLevelName().c_str());
  return false;
}

int run(int argc, char **argv, const char *manifestJson, Entries entries, int rank) {
  DriverOptions options;
  Manifest manifest;
  try {
    manifest = parseManifest(manifestJson);
  } catch (const ManifestError &error) {
    if (rank == 0)
      std::fprintf(stderr, "shardrt: error: %s\n", error.what());
    return 1;
  }
  try {
    options = parseSettings(argc, argv, manifest.settings);
  } catch (const UsageError &error) {
    if (rank == 0)
      std::fprintf(stderr, "shardrt: error: %s\n", error.what());
    return 2;
  }
  if (options.help) {
    if (rank == 0)
      std::fputs(usageText(argc > 0 ? argv[0] : "program").c_str(), stdout);
    return 0;
  }
  if (options.mode == Mode::Page) {
    if (options.reportPage.empty()) {
      if (rank == 0)
        std::fprintf(stderr,
                     "shardrt: error: --from-metrics makes the page --report-page FILE names\n");
      return 2;
    }
    return rank == 0 ? writeReportPageFromMetrics(options.reportPage, manifest, options.fromMetrics)
                     : 0;
  }
  if (!cpuFits(manifest, rank))
    return 1;
  DataPlan data;
  // A program without an optimizer does not train: checkProgram says so, rather than
  // asking for the data of a run that cannot happen.
  const bool evaluates = options.mode == Mode::Evaluate;
  if ((options.mode == Mode::Train && manifest.hasOptimizer) || evaluates) {
    try {
      data = planData(manifest, options.data, options.eval || evaluates);
    } catch (const BindingError &error) {
      if (rank == 0)
        std::fprintf(stderr, "shardrt: error: %s\n", error.what());
      return 2;
    } catch (const data::DataError &error) {
      if (rank == 0)
        std::fprintf(stderr, "shardrt: error: %s\n", error.what());
      return 1;
    }
    manifest.batch = data.batch;
  }
  Refusal refusal = checkProgram(manifest, options, entries);
  if (refusal.status) {
    if (rank == 0)
      std::fprintf(stderr, "shardrt: error: %s\n", refusal.message.c_str());
    return refusal.status;
  }

  if (!options.resume.empty() && options.mode == Mode::Train) {
    if (int status = checkResume(manifest, options, rank))
      return status;
  }

  std::vector<const char *> axisNames;
  for (const std::string &name : manifest.axisNames)
    axisNames.push_back(name.c_str());
  shardrt_init(&argc, &argv, static_cast<int>(manifest.axisSizes.size()), manifest.axisSizes.data(),
               axisNames.data());
  setCollectiveTimeout(options.collectiveTimeout);
  setMatmulInBf16(options.matmulBf16);
  shardrt_set_reduce_precision_bf16(options.gradientsBf16);
  shardrt_set_overlap_gradients(options.overlapGradients);
  shardrt_set_prefetch_weights(options.prefetchWeights);
  if (!memoryFits(manifest, options.checkMemory)) {
    shardrt_finalize();
    return 1;
  }
  bool opened = false;
  std::FILE *out = openOnRank0(options.output, stdout, rank, opened);
  // The page is written at the end: a path that cannot be written fails now.
  if (opened && !options.reportPage.empty())
    if (std::FILE *page = openOnRank0(options.reportPage, nullptr, rank, opened, "a"))
      std::fclose(page);
  if (!opened) {
    shardrt_finalize();
    return 1;
  }

  const Program program{manifest,
                        options,
                        data,
                        entries.train,
                        entries.eval,
                        entries.grad,
                        entries.prefill,
                        entries.decode,
                        rank,
                        {manifest.axisSizes, rankCoords(rank, manifest.axisSizes)},
                        out,
                        residentMemory().peak};
  int status = options.mode == Mode::Evaluate         ? runEvaluation(program)
               : options.mode == Mode::Forward        ? runForward(program)
               : options.mode == Mode::CheckGradients ? runGradientCheck(program)
               : options.mode == Mode::Generate       ? runGeneration(program)
                                                      : runTraining(program);
  if (rank == 0 && !closeOnRank0(out, options.output) && status == 0)
    status = 1;
  shardrt_finalize();
  return status;
}

/// Whether the address-space limit leaves room to start: OpenMPI 4.1.4's MPI_Init maps
/// up to about 200 MiB (as a singleton; less under mpirun) and fails, crashes in PMIx or
/// aborts when it cannot, with messages that do not say so. Said before MPI_Init, by
/// every process.
bool roomToStart() {
  constexpr int64_t mpiInitBytes = int64_t(256) << 20;
  const int64_t left = addressSpaceLeft();
  const int64_t need = mpiInitBytes + blasWorkBufferBytes();
  if (left < 0 || left >= need)
    return true;
  std::fprintf(stderr,
               "shardrt: error: the address-space limit (ulimit -v) leaves this process %s, "
               "and starting takes %s (MPI_Init maps about %s, OpenBLAS's work buffer is %s) "
               "before the program's own memory: raise the limit\n",
               bytesText(left).c_str(), bytesText(need).c_str(), bytesText(mpiInitBytes).c_str(),
               bytesText(blasWorkBufferBytes()).c_str());
  return false;
}

} // namespace
} // namespace shardrt

extern "C" int shardrt_main(int argc, char **argv, const char *manifest_json,
                            shardrt_entry_fn train, shardrt_entry_fn eval, shardrt_entry_fn grad,
                            shardrt_entry_fn prefill, shardrt_entry_fn decode) {
  shardrt::restartWithOneBlasThread();
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised && !shardrt::roomToStart())
    return 1;
  if (!initialised)
    MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int status = 1;
  try {
    status = shardrt::run(argc, argv, manifest_json, {train, eval, grad, prefill, decode}, rank);
  } catch (const std::exception &error) {
    // Out of memory, most likely, and maybe on this rank only: end the whole job.
    shardrt::fatal("%s", error.what());
  }
  if (!initialised)
    MPI_Finalize();
  return status;
}
