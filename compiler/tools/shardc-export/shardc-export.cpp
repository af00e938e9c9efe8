//===- shardc-export.cpp - a trained GPT for PyTorch ----------------------===//
//
// shardc export CHECKPOINT --format nanogpt|hf -o OUTDIR [--scale S]
//
// Writes W4's GPT from a training checkpoint (a file, or a run's folder: its
// newest) as GPT-2's safetensors and config.json for nanoGPT or Hugging Face
// (lib/Export, ExportGPT2.h). Only the parameters: the optimizer's state stays.
//
//===----------------------------------------------------------------------===//

#include "shardc/Export/ExportGPT2.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace shardc;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory category("shardc export options");
cl::opt<std::string> checkpoint(cl::Positional,
                                cl::desc("<checkpoint: ckpt-STEP.safetensors, or a folder of "
                                         "them (its newest)>"),
                                cl::Required, cl::cat(category));
cl::opt<std::string> formatName("format",
                                cl::desc("nanogpt: nanoGPT's model.py (nn.Linear weights "
                                         "[out, in]); hf: Hugging Face's GPT2LMHeadModel "
                                         "(Conv1D weights [in, out])"),
                                cl::value_desc("nanogpt|hf"), cl::Required, cl::cat(category));
cl::opt<std::string> outDir("o",
                            cl::desc("Folder to write model.safetensors, config.json and "
                                     "README.md into (made if missing)"),
                            cl::value_desc("dir"), cl::Required, cl::cat(category));
cl::opt<double> scale("scale",
                      cl::desc("The attention scale the model was trained with (its `scale` "
                               "parameter, which a checkpoint does not record); another than "
                               "GPT-2's 1/sqrt(head_dim), the default, is folded into the "
                               "query weights"),
                      cl::value_desc("S"), cl::cat(category));

int fail(const std::string &message) {
  llvm::errs() << "shardc export: error: " << message << "\n";
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "shardc export: a trained GPT (examples/gpt/gpt.shard's blocks) "
                              "as GPT-2's safetensors and config.json for PyTorch\n");
  std::optional<GPT2Format> format = parseGPT2Format(formatName);
  if (!format)
    return fail("unknown --format '" + formatName + "': the known formats are " +
                knownGPT2Formats());
  std::optional<double> modelScale;
  if (scale.getNumOccurrences())
    modelScale = scale.getValue();
  try {
    if (modelScale)
      checkAttentionScale(*modelScale);
    const GPTCheckpoint gpt = readGPTCheckpoint(checkpoint);
    const ExportedFiles files = exportGPT2(gpt, *format, modelScale, outDir);
    const GPTSizes &s = gpt.sizes;
    llvm::outs() << "shardc export: '" << gpt.path << "' (model " << gpt.model << ", step "
                 << gpt.step << "): " << s.layers << " layers, n_embd " << s.embed << ", "
                 << s.heads << " heads of " << s.headDim << ", MLP " << s.hidden << ", "
                 << s.positions << " positions, vocabulary " << s.vocab << "\n";
    llvm::outs() << "  --format " << gpt2FormatName(*format) << ": " << files.paths[0] << " ("
                 << files.tensors << " tensors, " << files.parameters << " values), "
                 << files.paths[1] << ", " << files.paths[2] << "\n";
    const double gpt2 = 1 / std::sqrt(double(s.headDim));
    if (!modelScale)
      llvm::outs() << "  attention scale: GPT-2's 1/sqrt(head_dim) = " << llvm::format("%.9g", gpt2)
                   << ", assumed (a checkpoint does not record the model's; --scale S gives "
                      "it)\n";
    else if (files.queryFactor != 1)
      llvm::outs() << "  attention scale: the model's " << llvm::format("%.9g", *modelScale)
                   << ", folded into the query weights (x "
                   << llvm::format("%.9g", files.queryFactor) << ") for GPT-2's "
                   << llvm::format("%.9g", gpt2) << "\n";
    return 0;
  } catch (const std::exception &error) {
    return fail(error.what());
  }
}
