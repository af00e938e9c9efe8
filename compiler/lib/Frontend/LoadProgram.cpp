//===- LoadProgram.cpp - a model file to its typed program ----------------===//

#include "shardc/Frontend/LoadProgram.h"

using namespace shardc;

LoadedProgram shardc::loadProgram(const std::string &modelPath, const LoadProgramOptions &options,
                                  DiagnosticEngine &diags) {
  LoadedProgram out;
  Sema sema(diags);
  sema.setConfig(options.config);
  out.loader = std::make_unique<ModuleLoader>(options.importDirs, diags);
  out.model = out.loader->loadModelFile(modelPath, [&](const ModuleAST &module) {
    if (options.onLoaded)
      options.onLoaded(module);
    sema.addModule(module);
  });
  if (!out.model || (options.allowLibrary && out.model->models.empty()))
    return out;
  out.program = sema.analyzeModel(*out.model, modelPath);
  std::optional<TypedProgram> &program = out.program;
  const RulesFileAST *rules = options.rules;
  if (program && (options.rulesNamed || rules) &&
      (!rules || !applyRules(*program, *rules, diags))) {
    if (options.keepShapesOnRuleErrors) {
      program->mesh = Mesh(); // the plan is incomplete: shapes only
      return out;
    }
    program.reset();
    for (const ConfigOverride &set : options.config)
      diags.note(set.nameRange, "the model's '" + set.name + "' is " + set.value + " by this flag");
  }
  if (program && options.reference)
    program->pipeline = {};
  // Gradient accumulation and a pipeline compile the training step at one
  // microbatch's size too; the full program's warnings are not said twice.
  if (program && rules && options.microbatch &&
      (program->microbatches.count > 1 || !program->pipeline.axis.empty())) {
    diags.showWarnings(false);
    out.microbatch = sema.analyzeModel(*out.model, modelPath, &program->microbatches);
    if (!out.microbatch || !applyRules(*out.microbatch, *rules, diags)) {
      out.microbatch.reset();
      if (options.keepShapesOnRuleErrors)
        program->mesh = Mesh();
      else
        program.reset();
    } else if (options.reference) {
      out.microbatch->pipeline = {};
    }
    diags.showWarnings(true);
  }
  return out;
}
