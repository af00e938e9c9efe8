/* manifest_keys.h - the keys of the manifest, a compiled program's own description.
 *
 * shardc writes the manifest (compiler/lib/Manifest) and the driver reads it
 * (lib/driver/driver_manifest.cpp); both spell its keys with these names, so that
 * they cannot drift apart. The format is in runtime/README.md. C++17, header only.
 */
#ifndef SHARDRT_MANIFEST_KEYS_H
#define SHARDRT_MANIFEST_KEYS_H

namespace shardrt::manifest_keys {

/* The top level. */
inline constexpr const char *kModel = "model";
inline constexpr const char *kMesh = "mesh";
inline constexpr const char *kParams = "params";
inline constexpr const char *kOptimizer = "optimizer";
inline constexpr const char *kInputs = "inputs";
inline constexpr const char *kTrain = "train";
inline constexpr const char *kEval = "eval";
inline constexpr const char *kMemoryPerRank = "memory_per_rank";
/* The communication plan, as shardc --report=json prints it (for the report page). */
inline constexpr const char *kPlan = "plan";
/* Optional: run settings the program was compiled with, in the run configuration's
 * keys ({"reduce_precision": "bf16"} from the rules file's `precision gradients :
 * bf16`), applied before the run's own configuration and flags. */
inline constexpr const char *kSettings = "settings";

/* The CPU the code is compiled for (shardc --target-cpu, `native` resolved to the
 * host's) and the instruction set features the code may use, by the names of
 * shardrt/cpu_features.def: every rank checks at start that its CPU has them. */
inline constexpr const char *kTarget = "target";
inline constexpr const char *kCpu = "cpu";
inline constexpr const char *kFeatures = "features";

/* The model's `generate INPUT ~ LOGITS` (null without): the input --generate fills
 * and the eval result it draws from, by name. */
inline constexpr const char *kGenerate = "generate";
inline constexpr const char *kInput = "input";
inline constexpr const char *kLogits = "logits";

/* The prefill and decode steps' arguments and results (absent without them). Prefill:
 * the parameters, one entry per layer of a stacked one (kLayer), the generate input;
 * then the logits and each cache's value. Decode: the parameters, the generate input at
 * one position, each sample's position ("position", of the same type), the caches
 * (kCache: true); then the logits at the position and the new caches. */
inline constexpr const char *kPrefill = "prefill";
inline constexpr const char *kDecode = "decode";
inline constexpr const char *kCache = "cache";

/* mesh: axis names and sizes, in the order collectives number the axes. */
inline constexpr const char *kAxes = "axes";
inline constexpr const char *kSizes = "sizes";

/* Every tensor: parameters, inputs and results. */
inline constexpr const char *kName = "name";
inline constexpr const char *kDtype = "dtype";
inline constexpr const char *kShape = "shape";
inline constexpr const char *kSplit = "split";
/* A parameter or input that is one layer of a stack. */
inline constexpr const char *kLayer = "layer";
inline constexpr const char *kGlobalShape = "global_shape";
/* A parameter whose dimension 0 stacks a scan's layers (a pipeline's, split over the
 * stage axis): its initialiser's fans come from one layer. */
inline constexpr const char *kStacked = "stacked";

/* A parameter's initialiser, an object of kName and kArgs. */
inline constexpr const char *kInit = "init";
inline constexpr const char *kArgs = "args";

/* optimizer: kName, kArgs and the names of the state tensors it keeps per parameter. */
inline constexpr const char *kState = "state";

/* An input: how to fill it with synthetic numbers, and for labels that feed one_hot
 * the number of classes (the run checks the labels it reads against it). */
inline constexpr const char *kFill = "fill";
inline constexpr const char *kClasses = "classes";
inline constexpr const char *kKind = "kind";
inline constexpr const char *kHigh = "high";
inline constexpr const char *kFillNormal = "normal";
inline constexpr const char *kFillUniform = "uniform";
inline constexpr const char *kFillIntegers = "integers";

/* train and eval: the results of the step, the eval step's maybe per example. */
inline constexpr const char *kResults = "results";
inline constexpr const char *kPerExample = "per_example";

/* memory_per_rank: bytes, of which the driver reads the total and the scratch. */
inline constexpr const char *kParameters = "parameters";
inline constexpr const char *kOptimizerState = "optimizer_state";
inline constexpr const char *kActivations = "activations";
inline constexpr const char *kActivationsAtPeak = "activations_at_peak";
/* The runtime's scratch buffer that the driver maps before the first step (optional). */
inline constexpr const char *kScratch = "scratch";
inline constexpr const char *kTotal = "total";

} // namespace shardrt::manifest_keys

#endif
