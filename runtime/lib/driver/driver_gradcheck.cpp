// --check-gradients: the grad entry against central differences of its own loss, on
// any mesh.
//
//  1. Parameters and inputs are filled as for --forward; grad runs once.
//  2. For each parameter, up to K elements are picked by global index, one in each of K
//     equal strata of the tensor (Philox under the seed), so they spread over it and
//     over the blocks of a split one.
//  3. Every rank that holds a copy of the element sets it to x + eps, then x - eps (as
//     f32), and every rank runs grad each time (it is collective); the copy is then
//     restored bitwise. The loss is grad's, not eval's: the training forward, with the
//     dropout masks of the filled inputs, is what the gradient is of (eval leaves
//     dropout out).
//  4. The element's first copy gives the analytic gradient and the steps actually
//     taken; fd = (L+ - L-) / (x+ - x-) passes if |fd - g| <= atol + rtol max(|fd|, |g|).
//  5. Where the one-sided slopes (L+ - L) / (x+ - x) and (L - L-) / (x - x-) disagree
//     beyond that tolerance, and still do (by half as much or more) with a quarter of
//     the step, the loss has a kink at x (relu of exactly 0: a row of dead units
//     feeding a matmul, with a zero bias, gives several at once, whatever eps is) and
//     no difference is its derivative: the element is counted under "kinks" and not
//     checked. A wrong gradient cannot hide there: the slopes do not depend on it.
//     Where they disagree at the step but agree at a quarter of it (a kink between
//     the two distances from x, or a strong curvature), the quarter step's central
//     difference is the one checked.
#include "collectives/watchdog.h"
#include "driver_json.h"
#include "driver_modes.h"
#include "mesh/mesh.h"
#include "random/prng.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace shardrt {
namespace {

/// Element `sample` of `samples` of a tensor of `count` elements: uniform in the
/// sample's stratum [sample * count / samples, (sample + 1) * count / samples).
int64_t pickElement(const TensorSpec &spec, uint64_t seed, int64_t sample, int64_t samples,
                    int64_t count) {
  std::string path = "fd." + spec.name + (spec.layer >= 0 ? "." + std::to_string(spec.layer) : "");
  const int64_t low = int64_t((__int128)sample * count / samples);
  const int64_t high = int64_t((__int128)(sample + 1) * count / samples);
  PhiloxCounter draw = philoxBlock(seed, fnv1a64(path.c_str()), uint64_t(sample));
  const uint64_t bits = uint64_t(draw[1]) << 32 | draw[0];
  return low + int64_t((unsigned __int128)bits * uint64_t(high - low) >> 64);
}

/// |a - b| <= tolerance passes.
double toleranceOf(double a, double b, const DriverOptions &options) {
  return options.fdAtol + options.fdRtol * std::max(std::fabs(a), std::fabs(b));
}

/// One element's analytic gradient and differences of the loss: central, and one-sided
/// after and before it.
struct Differences {
  double grad, central, after, before;
  double sidesApart() const { return std::fabs(after - before); }
  bool sidesDisagree(const DriverOptions &options) const {
    return sidesApart() > toleranceOf(after, before, options);
  }
};

struct ParamCheck {
  int64_t checked = 0, kinks = 0;
  double maxAbs = 0, maxRel = 0, worstScore = -1;
  int64_t worstIndex = 0;
  double worstFd = 0, worstGrad = 0;
  bool ok = true;

  void add(int64_t index, const Differences &d, bool kink, const DriverOptions &options) {
    if (kink) {
      ++kinks;
      return;
    }
    const double fd = d.central, grad = d.grad;
    const double err = std::fabs(fd - grad), scale = std::max(std::fabs(fd), std::fabs(grad));
    const double tolerance = toleranceOf(fd, grad, options);
    const double rel = scale > 0 ? err / scale : err;
    // How far into its tolerance the error goes (the error itself when both tolerances
    // are 0); NaN is as bad as it gets.
    const double score = std::isnan(err) ? INFINITY : tolerance > 0 ? err / tolerance : err;
    ok = ok && err <= tolerance;
    maxAbs = std::isnan(err) || err > maxAbs ? err : maxAbs;
    maxRel = std::isnan(rel) || rel > maxRel ? rel : maxRel;
    if (score > worstScore) {
      worstScore = score;
      worstIndex = index;
      worstFd = fd;
      worstGrad = grad;
    }
    ++checked;
  }

  std::string json(const TensorSpec &spec) const {
    JsonObject entry;
    entry.add("name", jsonString(spec.name));
    if (spec.layer >= 0)
      entry.add("layer", std::to_string(spec.layer));
    entry.add("checked", std::to_string(checked));
    if (kinks)
      entry.add("kinks", std::to_string(kinks));
    entry.add("max_abs_err", jsonNumber(maxAbs)).add("max_rel_err", jsonNumber(maxRel));
    JsonObject worst;
    worst.add("index", std::to_string(worstIndex));
    worst.add("fd", jsonNumber(worstFd)).add("grad", jsonNumber(worstGrad));
    entry.add("worst", checked ? worst.str() : "null");
    return entry.str();
  }
};

} // namespace

int runGradientCheck(const Program &program) {
  const Manifest &manifest = program.manifest;
  const DriverOptions &options = program.options;
  const Placement &place = program.place;
  std::vector<Block> params = allocateBlocks(manifest.params, place);
  std::vector<Block> inputs = allocateBlocks(manifest.inputs, place);
  std::vector<Block> loss, grads = allocateBlocks(manifest.params, place);
  loss.push_back(allocateBlock(lossSpec(), place));
  fillParams(params, options.seed);
  fillInputs(inputs, options.seed);
  program.grad(pointersOf({&params, &inputs, &loss, &grads}).data());
  const double unperturbedLoss = loss.front().floats()[0];

  // The perturbed runs write their gradients elsewhere, keeping the ones checked.
  std::vector<Block> perturbedGrads = allocateBlocks(manifest.params, place);
  std::vector<void *> perturbedBuffers = pointersOf({&params, &inputs, &loss, &perturbedGrads});
  auto perturbedLoss = [&] {
    program.grad(perturbedBuffers.data());
    return double(loss.front().floats()[0]);
  };

  bool ok = true;
  std::string entries;
  for (size_t p = 0; p < params.size(); ++p) {
    const TensorSpec &spec = manifest.params[p];
    const int64_t count = numElements(spec.shape), samples = std::min(options.fdSamples, count);
    ParamCheck check;
    for (int64_t sample = 0; sample < samples; ++sample) {
      const int64_t index = pickElement(spec, options.seed, sample, samples, count);
      const int64_t at = localIndex(spec.shape, params[p].local, params[p].offset, index);
      float *element = at >= 0 ? params[p].floats() + at : nullptr;
      const bool first = element && holdsFirstCopy(spec, place.coords);
      // The differences of a step of eps; the steps actually taken (as f32) and the
      // gradient come from the first copy, so that the sum over the mesh is its value.
      auto differences = [&](double eps) {
        const float original = element ? *element : 0.0f;
        double losses[2], shared[3] = {0, 0, 0};
        for (int side = 0; side < 2; ++side) {
          if (element)
            *element = original + float(side ? -eps : eps);
          if (first)
            shared[1 + side] = double(*element) - original;
          losses[side] = perturbedLoss();
        }
        if (element)
          *element = original;
        if (first)
          shared[0] = grads[p].floats()[at];
        watchedWorld("all_reduce of a gradient check", [&](MPI_Request *request) {
          MPI_Iallreduce(MPI_IN_PLACE, shared, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, request);
        });
        return Differences{shared[0], (losses[0] - losses[1]) / (shared[1] - shared[2]),
                           (losses[0] - unperturbedLoss) / shared[1],
                           (unperturbedLoss - losses[1]) / -shared[2]};
      };
      const Differences atEps = differences(options.fdEps);
      // A kink keeps its one-sided slopes apart at a quarter of the step; a smooth
      // point brings them four times closer; a kink between a quarter of the step and
      // the step away from x leaves them together, and the quarter step's central
      // difference is then the derivative (the step's straddles the kink). Without a
      // tolerance there is no telling.
      bool kink = false;
      Differences checked = atEps;
      if ((options.fdAtol > 0 || options.fdRtol > 0) && atEps.sidesDisagree(options)) {
        const Differences atQuarter = differences(options.fdEps / 4);
        kink = atQuarter.sidesDisagree(options) && atQuarter.sidesApart() > atEps.sidesApart() / 2;
        if (!atQuarter.sidesDisagree(options))
          checked = atQuarter;
      }
      check.add(index, checked, kink, options);
    }
    ok = ok && check.ok;
    entries += std::string(p ? ",\n    " : "\n    ") + check.json(spec);
  }
  const bool passed = rank0Verdict(ok);
  if (program.rank == 0)
    std::fprintf(program.out, "{\n  \"params\": [%s%s],\n  \"ok\": %s\n}\n", entries.c_str(),
                 entries.empty() ? "" : "\n  ", passed ? "true" : "false");
  return passed ? 0 : 1;
}

} // namespace shardrt
