// --generate: text from a trained model, as nanoGPT's sample.py. The model's
// `generate INPUT ~ LOGITS` names the i32 input filled one position at a time (its last
// axis; its other axes hold the samples) and the eval result that scores each next
// token. With prefill and decode steps (the model's attention reads `cache`s) the
// prefill runs the prompt at once and returns its keys and values (the caches), then
// each new token is one decode step at the position before it, which reads the caches
// and writes its own row. Without them, or with --recompute, every new token runs the eval entry on
// the whole buffer, the prompt and the tokens so far (the positions after them are zeros, which a
// causal model does not read). Either runs on this program's mesh; rank 0 gathers the logits of the
// last position, draws each sample's token (driver_sampling.h) and sends them to every rank. The
// draws depend on (seed, sample, position) alone, so every layout that computes the same logits
// writes the same text.
#include "driver_checkpoint.h"
#include "driver_json.h"
#include "driver_modes.h"
#include "driver_output.h"
#include "driver_sampling.h"

#include "collectives/watchdog.h"
#include "mesh/mesh.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

namespace shardrt {
namespace {

/// The prompt's bytes: --prompt, or --prompt-file's content. False after saying why.
bool readPrompt(const DriverOptions &options, std::string &prompt) {
  if (!options.prompt.empty() && !options.promptFile.empty()) {
    std::fprintf(stderr, "shardrt: error: --generate: give --prompt or --prompt-file, not both\n");
    return false;
  }
  prompt = options.prompt;
  if (!options.promptFile.empty()) {
    std::ifstream file(options.promptFile, std::ios::binary);
    std::ostringstream text;
    text << file.rdbuf();
    if (!file) {
      std::fprintf(stderr, "shardrt: error: --prompt-file: cannot read '%s': %s\n",
                   options.promptFile.c_str(), std::strerror(errno));
      return false;
    }
    prompt = text.str();
  }
  if (prompt.empty()) {
    std::fprintf(stderr, "shardrt: error: --generate continues a prompt: give --prompt TEXT or "
                         "--prompt-file FILE (a newline is a fine start)\n");
    return false;
  }
  return true;
}

/// What the generation is: where the tokens and logits are and how many there are.
struct Request {
  const TensorSpec &tokens, &logits;
  int64_t context, rows, vocab;
  int64_t promptLength, newTokens, samples;
};

/// The checks of a request against the model; false after saying what is wrong.
bool checkRequest(const Manifest &manifest, const Request &r, const std::string &prompt) {
  const std::string input = "input '" + r.tokens.name + "' " + shapeText(r.tokens.shape);
  if (r.promptLength + r.newTokens > r.context) {
    std::fprintf(stderr,
                 "shardrt: error: --generate: a prompt of %lld tokens and --max-tokens %lld need "
                 "%lld positions, past %s's context of %lld (the last axis of its %s)\n",
                 (long long)r.promptLength, (long long)r.newTokens,
                 (long long)(r.promptLength + r.newTokens), manifest.model.c_str(),
                 (long long)r.context, input.c_str());
    return false;
  }
  if (r.samples > r.rows) {
    std::fprintf(stderr,
                 "shardrt: error: --samples %lld: %s holds %lld samples side by side (the axes "
                 "before its last); compile it with a larger batch for more\n",
                 (long long)r.samples, input.c_str(), (long long)r.rows);
    return false;
  }
  for (size_t i = 0; i < prompt.size(); ++i)
    if (static_cast<unsigned char>(prompt[i]) >= r.vocab) {
      std::fprintf(stderr,
                   "shardrt: error: --generate: the prompt's byte %zu is %d, not a token of "
                   "%s's vocabulary of %lld\n",
                   i, static_cast<unsigned char>(prompt[i]), manifest.model.c_str(),
                   (long long)r.vocab);
      return false;
    }
  return true;
}

/// NumPy's .npy (format 1.0): f32 little-endian, C order. False after saying why.
bool writeNpy(const std::string &path, const std::vector<float> &values, const Shape &shape) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int64_t d : shape)
    header += std::to_string(d) + ", ";
  header += "), }";
  // The magic, version and length (10 bytes) and the header end at a multiple of 64.
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::ofstream file(path, std::ios::binary);
  const uint16_t length = uint16_t(header.size());
  file.write("\x93NUMPY\x01\x00", 8);
  file.write(reinterpret_cast<const char *>(&length), 2);
  file << header;
  file.write(reinterpret_cast<const char *>(values.data()), values.size() * sizeof(float));
  if (!file.flush()) {
    std::fprintf(stderr, "shardrt: error: --logits: cannot write '%s': %s\n", path.c_str(),
                 std::strerror(errno));
    return false;
  }
  return true;
}

/// The f32 tensor `spec` whose block this rank holds, whole on rank 0 (empty elsewhere).
std::vector<float> gatherFloats(const TensorSpec &spec, const Shape &meshSizes, const void *block) {
  GatheredResult gathered = gatherResult(spec, meshSizes, block, 0);
  std::vector<float> values(gathered.elements.size());
  std::memcpy(values.data(), gathered.elements.data(), values.size() * sizeof(float));
  return values;
}

/// Each row's logits at `position` of `whole` [rows, context, vocab]: [rows, vocab]
/// (empty for an empty `whole`: a rank but 0).
std::vector<float> logitsAt(const std::vector<float> &whole, int64_t rows, int64_t context,
                            int64_t position) {
  if (whole.empty())
    return whole;
  const int64_t vocab = int64_t(whole.size()) / (rows * context);
  std::vector<float> logits(size_t(rows * vocab));
  for (int64_t s = 0; s < rows; ++s)
    std::copy_n(&whole[(s * context + position) * vocab], vocab, &logits[s * vocab]);
  return logits;
}

/// Runs the eval entry on `tokens` and gives rank 0 the whole logits tensor.
std::vector<float> logitsOf(const Program &program, const Request &r,
                            const std::vector<int32_t> &tokens, std::vector<Block> &inputs,
                            std::vector<Block> &results, void **buffers) {
  const Manifest &manifest = program.manifest;
  copyFromWhole(inputs[manifest.generateInput], tokens.data());
  program.eval(buffers);
  return gatherFloats(r.logits, program.place.meshSizes, results[manifest.generateLogits].data());
}

/// --generate's KV cache: the prefill and decode entries and their buffers. The
/// parameters are the restored blocks (one layer of a stacked one is its rows of the
/// stack's block: the layer dimension is never split outside a pipeline); the other
/// arguments and the results have blocks of their own. The caches start as prefill's
/// values of them, and decode's new values are swapped in after each call.
class Decoder {
public:
  Decoder(const Program &program, const std::vector<Block> &params)
      : program(program), g(program.manifest.generation), prefill(bind(g.prefill, params)),
        decode(bind(g.decode, params)) {}

  /// Runs every position of `tokens` [rows, context] at once (the prompt's, and zeros
  /// after it); rank 0 gets the logits at position `last`, [rows, vocabulary].
  std::vector<float> runPrefill(const std::vector<int32_t> &tokens, int64_t context, int64_t last) {
    copyFromWhole(prefill.args[g.prefillTokens], tokens.data());
    program.prefill(prefill.buffers.data());
    for (size_t c = 0; c < g.decode.caches.size(); ++c) {
      const Block &value = prefill.results[c + 1];
      std::memcpy(decode.buffers[g.decode.caches[c]], value.data(),
                  size_t(value.count()) * sizeof(float));
    }
    return logitsAt(logitsOf(g.prefill, prefill), int64_t(tokens.size()) / context, context, last);
  }

  /// Runs position `position` of every sample, `tokens` [rows, context] holding its
  /// token; rank 0 gets the logits there, [rows, vocabulary].
  std::vector<float> step(const std::vector<int32_t> &tokens, int64_t context, int64_t position) {
    const int64_t rows = int64_t(tokens.size()) / context;
    std::vector<int32_t> column(rows), positions(rows, int32_t(position));
    for (int64_t s = 0; s < rows; ++s)
      column[s] = tokens[s * context + position];
    copyFromWhole(decode.args[g.tokens], column.data());
    copyFromWhole(decode.args[g.positions], positions.data());
    program.decode(decode.buffers.data());
    const size_t argCount = g.decode.args.size();
    for (size_t c = 0; c < g.decode.caches.size(); ++c)
      std::swap(decode.buffers[g.decode.caches[c]], decode.buffers[argCount + 1 + c]);
    return logitsOf(g.decode, decode);
  }

private:
  /// An entry's blocks, and its buffers in order: arguments, then results.
  struct Buffers {
    std::vector<Block> args, results;
    std::vector<void *> buffers;
  };

  Buffers bind(const Manifest::Step &step, const std::vector<Block> &params) const {
    Buffers b;
    b.args.resize(step.args.size());
    b.results = allocateBlocks(step.results, program.place);
    for (size_t i = 0; i < step.args.size(); ++i) {
      const int p = step.param[i];
      if (p < 0) {
        b.args[i] = allocateBlock(step.args[i], program.place);
        b.buffers.push_back(b.args[i].data());
        continue;
      }
      const Block &block = params[p];
      const int64_t layer = block.spec->stacked ? step.args[i].layer : 0;
      b.buffers.push_back(block.floats() +
                          layer * numElements(localShape(step.args[i], program.place.meshSizes)));
    }
    for (const Block &result : b.results)
      b.buffers.push_back(result.data());
    return b;
  }

  /// The logits (the step's first result) gathered whole on rank 0.
  std::vector<float> logitsOf(const Manifest::Step &step, const Buffers &b) const {
    return gatherFloats(step.results.front(), program.place.meshSizes, b.buffers[step.args.size()]);
  }

  const Program &program;
  const Manifest::Generation &g;
  Buffers prefill, decode;
};

} // namespace

int runGeneration(const Program &program) {
  const Manifest &manifest = program.manifest;
  const DriverOptions &options = program.options;
  const bool rank0 = program.rank == 0;
  const TensorSpec &tokensSpec = manifest.inputs[manifest.generateInput];
  const TensorSpec &logitsSpec = manifest.evalResults[manifest.generateLogits];
  const int64_t context = tokensSpec.shape.back();

  std::string prompt;
  const bool read = rank0 && readPrompt(options, prompt);
  broadcastFromRank0(prompt, "broadcast of the prompt");
  const int64_t promptLength = int64_t(prompt.size());
  const Request r{tokensSpec,
                  logitsSpec,
                  context,
                  numElements(tokensSpec.shape) / context,
                  logitsSpec.shape.back(),
                  promptLength,
                  options.maxTokens ? options.maxTokens : context - promptLength,
                  options.samples};
  if (!rank0Verdict(read && checkRequest(manifest, r, prompt)))
    return 2;

  std::string path;
  if (int status = findCheckpointToRead(manifest, options, program.rank, -1, path))
    return status;
  std::vector<Block> params = allocateBlocks(manifest.params, program.place);
  std::vector<Block> inputs = allocateBlocks(manifest.inputs, program.place);
  std::vector<Block> results = allocateBlocks(manifest.evalResults, program.place);
  std::vector<void *> buffers = pointersOf({&params, &inputs, &results});
  const RunPosition at =
      Checkpointer(program, 1).restore(path, params, /*state=*/{}, /*resuming=*/false);

  // Every sample starts from the prompt; rows past --samples stay zeros.
  std::vector<int32_t> tokens(size_t(r.rows * context), 0);
  for (int64_t s = 0; s < r.samples; ++s)
    for (int64_t i = 0; i < r.promptLength; ++i)
      tokens[s * context + i] = static_cast<unsigned char>(prompt[i]);
  if (rank0 && r.samples == 1) {
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    std::fflush(stdout);
  }

  const Sampling sampling{options.temperature, options.topK, options.topP};
  std::optional<Decoder> decoder;
  if (manifest.generation.present && !options.recompute)
    decoder.emplace(program, params);
  double prefillSeconds = 0;
  const auto start = std::chrono::steady_clock::now();
  // The drawn tokens travel as bytes: int32 each.
  std::string drawn(r.samples * sizeof(int32_t), '\0');
  for (int64_t position = r.promptLength; position < r.promptLength + r.newTokens; ++position) {
    // Every row's logits at the position before, [rows, vocab]: from the prefill (the
    // prompt at once), the decode step, or the eval entry over the whole context.
    std::vector<float> logits;
    if (decoder && position == r.promptLength) {
      const auto prefillStart = std::chrono::steady_clock::now();
      logits = decoder->runPrefill(tokens, context, position - 1);
      prefillSeconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - prefillStart).count();
    } else {
      logits = decoder ? decoder->step(tokens, context, position - 1)
                       : logitsAt(logitsOf(program, r, tokens, inputs, results, buffers.data()),
                                  r.rows, context, position - 1);
    }
    if (rank0)
      for (int64_t s = 0; s < r.samples; ++s) {
        const float *row = &logits[s * r.vocab];
        // A diverged checkpoint's logits: token -1 stops every rank.
        const bool nan = std::any_of(row, row + r.vocab, [](float x) { return std::isnan(x); });
        const int32_t token =
            nan ? -1 : drawToken(row, r.vocab, sampling, tokenUniform(options.seed, s, position));
        if (nan)
          std::fprintf(stderr,
                       "\nshardrt: error: --generate: the logits of sample %lld at position %lld "
                       "are NaN: the checkpoint's parameters are not usable ('%s')\n",
                       (long long)s, (long long)position - 1, path.c_str());
        std::memcpy(&drawn[s * sizeof(int32_t)], &token, sizeof(int32_t));
      }
    broadcastFromRank0(drawn, "broadcast of the drawn tokens");
    std::vector<int32_t> next(r.samples);
    std::memcpy(next.data(), drawn.data(), drawn.size());
    if (std::find(next.begin(), next.end(), -1) != next.end())
      return 1;
    for (int64_t s = 0; s < r.samples; ++s)
      tokens[s * context + position] = next[s];
    if (rank0 && r.samples == 1 && r.vocab <= 256) {
      std::fputc(next[0], stdout);
      std::fflush(stdout);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() -
      prefillSeconds;

  const int64_t length = r.promptLength + r.newTokens;
  auto sampleTokens = [&](int64_t s) {
    return std::vector<int32_t>(tokens.begin() + s * context,
                                tokens.begin() + s * context + length);
  };
  if (rank0) {
    if (r.samples == 1 && r.vocab <= 256) {
      std::fputc('\n', stdout);
    } else {
      for (int64_t s = 0; s < r.samples; ++s) {
        if (s > 0)
          std::fputs("---\n", stdout);
        for (int32_t token : sampleTokens(s))
          r.vocab <= 256 ? (void)std::fputc(token, stdout) : (void)std::printf("%d ", token);
        std::fputc('\n', stdout);
      }
    }
    std::fflush(stdout);
  }

  bool written = true;
  if (!options.logits.empty()) {
    std::vector<float> logits = logitsOf(program, r, tokens, inputs, results, buffers.data());
    if (rank0) {
      std::vector<float> kept;
      for (int64_t s = 0; s < r.samples; ++s)
        kept.insert(kept.end(), logits.begin() + s * context * r.vocab,
                    logits.begin() + (s * context + length) * r.vocab);
      written = writeNpy(options.logits, kept, {r.samples, length, r.vocab});
    }
  }

  if (rank0 && !options.output.empty()) {
    JsonObject summary;
    summary.add("model", jsonString(manifest.model)).add("mesh", meshJson(manifest));
    summary.add("checkpoint", jsonString(path)).add("step", std::to_string(at.step));
    summary.add("seed", std::to_string(options.seed));
    summary.add("decode", jsonString(decoder ? "kv_cache" : "recompute"));
    summary.add("prefill_seconds", jsonNumber(prefillSeconds));
    summary.add("prompt_tokens", std::to_string(r.promptLength));
    summary.add("new_tokens", std::to_string(r.newTokens));
    summary.add("seconds", jsonNumber(seconds));
    summary.add("tokens_per_second", jsonNumber(double(r.newTokens * r.samples) / seconds));
    std::string samples = "[";
    for (int64_t s = 0; s < r.samples; ++s) {
      std::string ids = "[", text;
      for (int32_t token : sampleTokens(s)) {
        ids += (ids.size() > 1 ? ", " : "") + std::to_string(token);
        text += char(token);
      }
      JsonObject sample;
      sample.add("tokens", ids + "]");
      if (r.vocab <= 256) // bytes that are not UTF-8 become U+FFFD
        sample.add("text", nlohmann::json(text).dump(-1, ' ', false,
                                                     nlohmann::json::error_handler_t::replace));
      samples += (s ? ", " : "") + sample.str();
    }
    summary.add("samples", samples + "]");
    std::fprintf(program.out, "%s\n", summary.str().c_str());
  }
  return rank0Verdict(written) ? 0 : 1;
}

} // namespace shardrt
