// --forward: the program's forward pass once, on filled parameters and synthetic inputs
// (never the data they are bound to), its eval results gathered to rank 0 and written as the
// results JSON. Every mesh starts from the unsplit program's numbers, so the JSON of a sharded run
// can be compared with the reference build's (compare_outputs.py).
#include "driver_modes.h"
#include "driver_output.h"

namespace shardrt {

int runForward(const Program &program) {
  const Manifest &manifest = program.manifest;
  std::vector<Block> params = allocateBlocks(manifest.params, program.place);
  std::vector<Block> inputs = allocateBlocks(manifest.inputs, program.place);
  std::vector<Block> results = allocateBlocks(manifest.evalResults, program.place);
  fillParams(params, program.options.seed);
  fillInputs(inputs, program.options.seed);

  program.eval(pointersOf({&params, &inputs, &results}).data());

  std::vector<GatheredResult> gathered;
  for (size_t i = 0; i < results.size(); ++i)
    gathered.push_back(gatherResult(manifest.evalResults[i], program.place.meshSizes,
                                    results[i].data(), static_cast<int>(i)));
  if (program.rank == 0)
    writeResults(program.out, manifest, program.options.seed, program.options.values, gathered);
  return 0;
}

} // namespace shardrt
