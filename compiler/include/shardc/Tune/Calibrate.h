//===- Calibrate.h - this machine's constants for the cost model -*- C++ -*-===//
//
// The calibration the cost model prices a plan with (CostModel.h): read from
// --calibration, or measured by shardrt-calibrate on the ranks as the timed
// runs start them and, with --hosts, on one host's ranks.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_TUNE_CALIBRATE_H
#define SHARDC_TUNE_CALIBRATE_H

#include "shardc/Tune/CostModel.h"
#include "shardc/Tune/Search.h"

#include "llvm/Support/Error.h"

namespace shardc {

/// The calibration: read from --calibration, or measured here, both checked by
/// parseCalibration. The GEMM and streaming rates and the ranks' own link are
/// measured as the timed runs start them (all N ranks); with --hosts, a host's link
/// with its N/H ranks over shared memory. `argv0` finds shardrt-calibrate.
llvm::Expected<Calibration> loadOrMeasureCalibration(const TuneOptions &options, const char *argv0);

} // namespace shardc

#endif
