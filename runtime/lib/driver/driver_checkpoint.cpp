// Checkpoints of a training run (driver_checkpoint.h).
//
// Saving gathers each tensor's blocks to rank 0 (the first copy of each block, as
// --forward gathers results) and rank 0 writes one file. Restoring reads whole tensors
// and copies out this rank's blocks, so a checkpoint restores onto any mesh and rules
// file that split the same tensors some other way.
#include "driver_checkpoint.h"
#include "checkpoint_file.h"
#include "collectives/watchdog.h"
#include "driver_json.h"
#include "driver_output.h"
#include "host/host.h"
#include "mesh/mesh.h"
#include "random/prng.h"

#include <fcntl.h>
#include <mpi.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <set>

namespace shardrt {
namespace {

constexpr const char *kFormat = "shardrt-checkpoint-1";
constexpr int kGatherTag = 7;

using SavedTensor = Checkpointer::Tensor;

/// The tensors a checkpoint of this program holds, in manifest order: the parameters,
/// then each kind of optimizer state.
std::vector<SavedTensor> savedTensors(const Manifest &manifest) {
  std::vector<SavedTensor> params;
  std::map<std::string, size_t> byName;
  for (size_t i = 0; i < manifest.params.size(); ++i) {
    const TensorSpec &spec = manifest.params[i];
    auto [at, added] = byName.emplace(spec.name, params.size());
    if (added)
      params.push_back({"params/" + spec.name, spec.dtype, spec.globalShape, -1, {}});
    std::vector<size_t> &layers = params[at->second].layers;
    const size_t layer = spec.layer < 0 ? 0 : size_t(spec.layer);
    if (layers.size() <= layer)
      layers.resize(layer + 1);
    layers[layer] = i;
  }
  std::vector<SavedTensor> tensors = params;
  for (size_t kind = 0; kind < manifest.optimizerState.size(); ++kind)
    for (const SavedTensor &param : params) {
      SavedTensor state = param;
      state.name = "opt_state/" + manifest.optimizerState[kind] + "/" + param.name.substr(7);
      state.kind = int(kind);
      tensors.push_back(state);
    }
  return tensors;
}

/// This rank's block of one layer of `tensor`: the train entry's params, or its state
/// (kind-major: every parameter's first kind, then the next).
const Block &blockOf(const SavedTensor &tensor, size_t layer, const std::vector<Block> &params,
                     const std::vector<Block> &state) {
  const size_t index = tensor.layers[layer];
  return tensor.kind < 0 ? params[index] : state[size_t(tensor.kind) * params.size() + index];
}

/// How a tensor lies on the mesh: each dimension's axes and their sizes, so that the
/// same axis names on another mesh read as another layout: `[none, model=4]`,
/// `[(data=2, model=4), none]`; a stack's layer dimension is never split.
std::string layoutText(const Manifest &manifest, const TensorSpec &spec) {
  std::string text = "[";
  if (spec.layer >= 0)
    text += "none";
  for (const std::vector<int> &axes : spec.split) {
    text += text.size() > 1 ? ", " : "";
    std::string dim;
    for (int axis : axes)
      dim += (dim.empty() ? "" : ", ") + manifest.axisNames[axis] + "=" +
             std::to_string(manifest.axisSizes[axis]);
    text += axes.empty() ? "none" : axes.size() == 1 ? dim : "(" + dim + ")";
  }
  return text + "]";
}

std::string hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

/// What a checkpoint must agree on to be resumed: the model's name, its tensors'
/// names, dtypes and shapes, the optimizer. Not the mesh or the rules.
std::string modelFingerprint(const Manifest &manifest, const std::vector<SavedTensor> &tensors) {
  std::string text = manifest.model + "\n" + manifest.optimizer + "\n";
  for (const SavedTensor &tensor : tensors)
    text += tensor.name + " " + dtypeName(tensor.dtype) + " " + shapeText(tensor.shape) + "\n";
  return hex64(fnv1a64(text.c_str()));
}

/// Each tensor's `layoutText`, by name.
nlohmann::json layoutsOf(const Manifest &manifest, const std::vector<SavedTensor> &tensors) {
  nlohmann::json layouts = nlohmann::json::object();
  for (const SavedTensor &tensor : tensors)
    layouts[tensor.name] = layoutText(manifest, manifest.params[tensor.layers[0]]);
  return layouts;
}

/// The layout: the mesh and every tensor's layout. Another one means a reshard.
std::string layoutFingerprint(const nlohmann::json &layouts) {
  return hex64(fnv1a64((describeMesh() + "\n" + layouts.dump()).c_str()));
}

/// Pads `text` with spaces to `width`.
std::string padded(std::string text, size_t width) {
  text.resize(std::max(text.size(), width), ' ');
  return text;
}

/// The error checkResume reports for a checkpoint this program cannot continue from.
CheckpointError mismatch(const CheckpointReader &reader, const std::string &what) {
  return CheckpointError("'" + reader.path() + "': " + what);
}

/// Everything checkResume checks, on rank 0; throws CheckpointError.
void vetCheckpoint(const CheckpointReader &reader, const Manifest &manifest,
                   const DriverOptions &options) {
  const std::map<std::string, std::string> &meta = reader.metadata();
  for (const char *key : {"format", "model", "model_fingerprint", "step", "epoch",
                          "examples_in_epoch", "batch", "seed", "layouts"})
    if (!meta.count(key))
      throw mismatch(reader, std::string("not a shardrt checkpoint: no '") + key + "' metadata");
  if (meta.at("format") != kFormat)
    throw mismatch(reader, "format '" + meta.at("format") + "', this program reads " + kFormat);
  if (meta.at("model") != manifest.model)
    throw mismatch(reader, "written by model '" + meta.at("model") + "', this program is '" +
                               manifest.model + "'");
  for (const char *key : {"step", "epoch", "examples_in_epoch", "batch", "seed"}) {
    const std::string &value = meta.at(key);
    if (value.empty() || value.size() > 19 ||
        value.find_first_not_of("0123456789") != std::string::npos)
      throw mismatch(reader, std::string("metadata '") + key + "' is not a count: '" + value + "'");
  }
  const std::vector<SavedTensor> expected = savedTensors(manifest);
  for (const SavedTensor &tensor : expected) {
    const StoredTensor *stored = reader.find(tensor.name);
    if (!stored)
      throw mismatch(reader, "it has no tensor '" + tensor.name + "', which " + manifest.model +
                                 " needs (another model, or another optimizer?)");
    if (stored->dtype != tensor.dtype || stored->shape != tensor.shape)
      throw mismatch(reader, "tensor '" + tensor.name + "' is " + dtypeName(stored->dtype) +
                                 shapeText(stored->shape) + " there, but " +
                                 dtypeName(tensor.dtype) + shapeText(tensor.shape) + " in " +
                                 manifest.model);
  }
  std::set<std::string> names;
  for (const SavedTensor &tensor : expected)
    names.insert(tensor.name);
  for (const StoredTensor &stored : reader.tensors())
    if (!names.count(stored.name))
      throw mismatch(reader,
                     "it holds '" + stored.name + "', which " + manifest.model + " does not have");
  // Sampling reads the parameters alone: any batch, and --seed is the draws'.
  if (options.mode == Mode::Generate)
    return;
  if (meta.at("batch") != std::to_string(manifest.batch))
    throw mismatch(reader, "written with a global batch of " + meta.at("batch") +
                               ", this program's is " + std::to_string(manifest.batch));
  if (options.seedGiven && meta.at("seed") != std::to_string(options.seed))
    throw mismatch(
        reader, "written by a run with --seed " + meta.at("seed") + ", not " +
                    std::to_string(options.seed) +
                    " (a resumed run keeps its seed: leave --seed and the configuration's \"seed\" "
                    "out, or give " +
                    meta.at("seed") + ")");
  for (const StoredTensor &stored : reader.tensors())
    reader.read(stored); // every checksum, before anything is overwritten
}

double secondsNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string checkpointPath(const std::string &folder, const std::string &prefix, int64_t step) {
  return folder + "/" + prefix + "-" + std::to_string(step) + ".safetensors";
}

bool isFolder(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

CheckpointError noCheckpointIn(const std::string &folder) {
  return CheckpointError("'" + folder + "' holds no checkpoint (ckpt-STEP.safetensors)");
}

} // namespace

int checkResume(const Manifest &manifest, DriverOptions &options, int rank) {
  std::string path = options.resume, seed;
  bool ok = true;
  if (rank == 0) {
    try {
      if (isFolder(path)) {
        std::vector<std::pair<int64_t, std::string>> found = listCheckpoints(path, "ckpt");
        if (found.empty())
          throw noCheckpointIn(path);
        path = found.back().second;
      }
      CheckpointReader reader(path);
      vetCheckpoint(reader, manifest, options);
      seed = reader.metadata().at("seed");
    } catch (const CheckpointError &error) {
      std::fprintf(stderr, "shardrt: error: --resume: %s\n", error.what());
      ok = false;
    }
  }
  if (!rank0Verdict(ok))
    return 1;
  broadcastFromRank0(path, "broadcast of a checkpoint's path");
  broadcastFromRank0(seed, "broadcast of a checkpoint's seed");
  options.resume = path;
  options.seed = std::stoull(seed);
  return 0;
}

int findCheckpointToRead(const Manifest &manifest, const DriverOptions &options, int rank,
                         int64_t after, std::string &path) {
  const bool generates = options.mode == Mode::Generate;
  path.clear();
  bool ok = true;
  if (rank == 0) {
    try {
      path = generates ? options.resume : options.evaluate;
      if (isFolder(path)) {
        std::vector<std::pair<int64_t, std::string>> found = listCheckpoints(path, "ckpt");
        if (found.empty() && options.poll <= 0)
          throw noCheckpointIn(path);
        path = !found.empty() && found.back().first > after ? found.back().second : "";
      }
      if (!path.empty())
        vetCheckpoint(CheckpointReader(path), manifest, options);
    } catch (const CheckpointError &error) {
      std::fprintf(stderr, "shardrt: error: %s: %s\n", generates ? "--resume" : "--evaluate",
                   error.what());
      ok = false;
    }
  }
  if (!rank0Verdict(ok))
    return 1;
  broadcastFromRank0(path, "broadcast of a checkpoint's path");
  return 0;
}

namespace {

/// Takes the folder's lock into `fd`, or says who holds it. The lock file keeps the
/// holder's "pid PID on HOST" for the message of the next run that tries.
bool lockFolder(const std::string &folder, int &fd) {
  const std::string path = folder + "/.lock";
  fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    std::fprintf(stderr, "shardrt: error: --checkpoint-dir: cannot open the lock file '%s': %s\n",
                 path.c_str(), std::strerror(errno));
    return false;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char holder[256] = {0};
    const ssize_t n = ::pread(fd, holder, sizeof holder - 1, 0);
    holder[n > 0 ? n : 0] = 0;
    holder[std::strcspn(holder, "\n")] = 0;
    if (error == EWOULDBLOCK)
      std::fprintf(stderr,
                   "shardrt: error: --checkpoint-dir: another run is using '%s' (%s); give each "
                   "run a folder of its own\n",
                   folder.c_str(), holder[0] ? holder : "its lock file names no process");
    else
      std::fprintf(stderr, "shardrt: error: --checkpoint-dir: cannot lock '%s': %s\n", path.c_str(),
                   std::strerror(error));
    ::close(fd);
    fd = -1;
    return false;
  }
  const std::string holder = "pid " + std::to_string(::getpid()) + " on " + hostName() + "\n";
  // Without the note the lock still holds; the next run's message only says less.
  [[maybe_unused]] const bool noted =
      ::ftruncate(fd, 0) == 0 && ::pwrite(fd, holder.data(), holder.size(), 0) >= 0;
  return true;
}

} // namespace

Checkpointer::Checkpointer(const Program &program, int64_t stepsPerEpoch)
    : program_(program), stepsPerEpoch_(stepsPerEpoch), tensors_(savedTensors(program.manifest)),
      layouts_(layoutsOf(program.manifest, tensors_)),
      layoutFingerprint_(layoutFingerprint(layouts_)),
      modelFingerprint_(modelFingerprint(program.manifest, tensors_)) {}

bool Checkpointer::prepare() {
  const std::string &folder = program_.options.checkpointDir;
  if (folder.empty())
    return true;
  bool ok = true;
  if (program_.rank == 0) {
    struct stat existing {};
    if (::mkdir(folder.c_str(), 0777) != 0 && errno != EEXIST) {
      std::fprintf(stderr, "shardrt: error: --checkpoint-dir: cannot create '%s': %s\n",
                   folder.c_str(), std::strerror(errno));
      ok = false;
    } else if (::stat(folder.c_str(), &existing) == 0 && !S_ISDIR(existing.st_mode)) {
      std::fprintf(stderr, "shardrt: error: --checkpoint-dir: '%s' is a file, not a folder\n",
                   folder.c_str());
      ok = false;
    } else {
      ok = lockFolder(folder, lockFd_);
    }
  }
  lastSaveSeconds_ = secondsNow();
  return rank0Verdict(ok);
}

RunPosition Checkpointer::restore(const std::string &path, const std::vector<Block> &params,
                                  const std::vector<Block> &state, bool resuming) {
  // Rank 0 reads the file and sends each tensor to every rank, which keeps its blocks:
  // ranks on other hosts need not see the file (no shared file system).
  const bool root = program_.rank == 0;
  newest_ = path; // until this run writes one
  std::unique_ptr<CheckpointReader> reader;
  std::string metadataText;
  try {
    if (root) {
      reader = std::make_unique<CheckpointReader>(path);
      metadataText = nlohmann::json(reader->metadata()).dump();
    }
    broadcastFromRank0(metadataText, "broadcast of a checkpoint's metadata");
    const auto meta = nlohmann::json::parse(metadataText).get<std::map<std::string, std::string>>();
    // Numbers checkResume (or findCheckpointToRead) has vetted.
    auto number = [&](const char *key) { return int64_t(std::stoll(meta.at(key))); };
    const RunPosition position{number("step"), number("epoch"), number("examples_in_epoch")};
    const nlohmann::json written = nlohmann::json::parse(meta.at("layouts"));
    if (meta.count("best") && !program_.options.bestMetric.empty()) {
      // The series goes on from its record, if it is of the same metric.
      nlohmann::json record = nlohmann::json::parse(meta.at("best"));
      if (record.at("metric") == program_.options.bestMetric &&
          (record.at("direction") == "max") == program_.options.bestHigher)
        best_ = {true, record.at("value").get<double>(), record.at("step").get<int64_t>()};
    }
    const bool sameLayout =
        meta.count("layout_fingerprint") && meta.at("layout_fingerprint") == layoutFingerprint_;
    struct Move {
      std::string name, type, from, to;
      int64_t bytes, perRank;
    };
    std::vector<Move> moves;
    for (const SavedTensor &tensor : tensors_) {
      if (tensor.kind >= 0 && state.empty())
        continue; // an evaluation restores the parameters only
      std::vector<uint32_t> whole(numElements(tensor.shape));
      if (root)
        whole = reader->read(*reader->find(tensor.name));
      watchedWorld("broadcast of a checkpoint's tensor", [&](MPI_Request *request) {
        MPI_Ibcast(whole.data(), int(whole.size()), MPI_UINT32_T, 0, MPI_COMM_WORLD, request);
      });
      int64_t perRank = 0;
      for (size_t layer = 0; layer < tensor.layers.size(); ++layer) {
        const Block &block = blockOf(tensor, layer, params, state);
        copyFromWhole(block, whole.data());
        perRank += block.count() * 4;
      }
      const std::string to = layouts_.at(tensor.name);
      const std::string from = written.value(tensor.name, std::string("?"));
      if (from != to)
        moves.push_back({tensor.name, dtypeName(tensor.dtype) + shapeText(tensor.shape), from, to,
                         int64_t(whole.size()) * 4, perRank});
    }
    if (root) {
      const std::string writtenMesh = meta.count("mesh") ? meta.at("mesh") : "?";
      std::fprintf(stderr, "%s step %lld (epoch %lld) from '%s'\n",
                   resuming                                  ? "resuming after"
                   : program_.options.mode == Mode::Generate ? "sampling from"
                                                             : "evaluating",
                   (long long)position.step, (long long)position.epoch, path.c_str());
      if (meta.count("blas") && meta.at("blas") != blasConfig())
        std::fprintf(stderr,
                     "shardrt: warning: the checkpoint was written with %s, this run uses %s: "
                     "its sums run in another order, so its losses differ from the "
                     "uninterrupted run's in the last bits\n",
                     meta.at("blas").c_str(), blasConfig().c_str());
      if (sameLayout) {
        std::fprintf(stderr, "reshard plan: none, mesh %s and every layout as written\n",
                     writtenMesh.c_str());
      } else {
        int64_t total = 0;
        size_t widths[4] = {0, 0, 0, 0};
        for (const Move &move : moves) {
          total += move.bytes;
          widths[0] = std::max(widths[0], move.name.size());
          widths[1] = std::max(widths[1], move.type.size());
          widths[2] = std::max(widths[2], move.from.size());
          widths[3] = std::max(widths[3], move.to.size());
        }
        std::fprintf(stderr,
                     "reshard plan, mesh %s -> %s: %zu of %zu tensors change layout, %s; rank 0 "
                     "reads the whole tensors and sends them, each rank keeps its blocks\n",
                     writtenMesh.c_str(), describeMesh().c_str(), moves.size(), tensors_.size(),
                     bytesText(total).c_str());
        for (const Move &move : moves)
          std::fprintf(stderr, "  %s  %s  %s -> %s  %s, %s per rank\n",
                       padded(move.name, widths[0]).c_str(), padded(move.type, widths[1]).c_str(),
                       padded(move.from, widths[2]).c_str(), padded(move.to, widths[3]).c_str(),
                       bytesText(move.bytes).c_str(), bytesText(move.perRank).c_str());
      }
    }
    lastSaveStep_ = position.step;
    return position;
  } catch (const std::exception &error) {
    // checkResume read this file a moment ago: it changed under us. Rank 0 says so and
    // ends the job (the others wait in a broadcast).
    fatal("%s: %s", resuming || program_.options.mode == Mode::Generate ? "--resume" : "--evaluate",
          error.what());
  }
}

bool Checkpointer::afterStep(const RunPosition &position, bool lastStep,
                             const std::vector<Block> &params, const std::vector<Block> &state,
                             const Evaluation *evaluation) {
  const DriverOptions &options = program_.options;
  if (options.checkpointDir.empty())
    return true;
  if (evaluation && !options.bestMetric.empty()) {
    double value = 0;
    for (const auto &[name, mean] : evaluation->means)
      value = name == options.bestMetric ? mean : value;
    if (!best_.valid || (options.bestHigher ? value > best_.value : value < best_.value)) {
      best_ = {true, value, position.step};
      if (!save("best", position, params, state))
        return false;
    }
  }
  bool due = lastStep;
  if (options.checkpointEvery)
    due = due || position.step % options.checkpointEvery == 0;
  else if (stepsPerEpoch_)
    due = due || position.step % stepsPerEpoch_ == 0;
  if (options.checkpointSeconds > 0) {
    // Rank 0's clock decides, so that every rank saves the same steps.
    due = rank0Verdict(due || secondsNow() - lastSaveSeconds_ >= options.checkpointSeconds);
  }
  if (!due || position.step == lastSaveStep_)
    return true;
  return save("ckpt", position, params, state);
}

bool Checkpointer::save(const std::string &prefix, const RunPosition &position,
                        const std::vector<Block> &params, const std::vector<Block> &state) {
  const double start = secondsNow();
  const Manifest &manifest = program_.manifest;
  const Shape &meshSizes = program_.place.meshSizes;
  const bool root = program_.rank == 0;
  std::vector<std::vector<uint32_t>> wholes(tensors_.size());
  for (size_t t = 0; t < tensors_.size(); ++t) {
    if (root)
      wholes[t].resize(numElements(tensors_[t].shape));
    for (size_t layer = 0; layer < tensors_[t].layers.size(); ++layer) {
      const Block &block = blockOf(tensors_[t], layer, params, state);
      GatheredResult gathered = gatherResult(*block.spec, meshSizes, block.data(), kGatherTag);
      if (root)
        std::memcpy(wholes[t].data() + layer * gathered.elements.size(), gathered.elements.data(),
                    gathered.elements.size() * 4);
    }
  }
  bool ok = true;
  if (root) {
    std::vector<TensorToWrite> toWrite;
    for (size_t t = 0; t < tensors_.size(); ++t)
      toWrite.push_back({tensors_[t].name, tensors_[t].dtype, tensors_[t].shape, wholes[t].data()});
    const DriverOptions &options = program_.options;
    std::map<std::string, std::string> metadata = {
        {"format", kFormat},
        {"model", manifest.model},
        {"model_fingerprint", modelFingerprint_},
        {"layout_fingerprint", layoutFingerprint_},
        {"mesh", describeMesh()},
        {"layouts", layouts_.dump()},
        {"optimizer", manifest.hasOptimizer ? manifest.optimizer : ""},
        {"blas", blasConfig()},
        {"step", std::to_string(position.step)},
        {"epoch", std::to_string(position.epoch)},
        {"examples_in_epoch", std::to_string(position.examplesInEpoch)},
        {"batch", std::to_string(manifest.batch)},
        {"seed", std::to_string(options.seed)},
        {"config", options.effective.dump()},
        {"prng", "philox4x32-10: parameters (seed, path, index); epoch order (seed, epoch); "
                 "synthetic inputs and dropout (seed, step, path, index)"},
    };
    if (best_.valid)
      metadata["best"] = nlohmann::json{
          {"metric", options.bestMetric},
          {"direction", options.bestHigher ? "max" : "min"},
          {"value", best_.value},
          {"step",
           best_.step}}.dump();
    try {
      const std::string path = checkpointPath(options.checkpointDir, prefix, position.step);
      writeCheckpointFile(path, toWrite, metadata);
      if (prefix == "ckpt")
        newest_ = path;
      pruneCheckpoints(options.checkpointDir, prefix, options.keep);
    } catch (const CheckpointError &error) {
      std::fprintf(stderr, "shardrt: error: checkpoint after step %lld: %s\n",
                   (long long)position.step, error.what());
      ok = false;
    }
  }
  ok = rank0Verdict(ok);
  if (prefix == "ckpt") {
    lastSaveStep_ = position.step;
    lastSaveSeconds_ = secondsNow();
  }
  ++written_;
  seconds_ += secondsNow() - start;
  return ok;
}

} // namespace shardrt
