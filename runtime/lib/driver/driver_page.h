// The run's report page (--report-page): one self-contained HTML file, no scripts and
// nothing fetched, with the training and evaluation curves (SVG), the summary, memory
// per rank and the communication plan (the manifest's plan, shardc --report=json), and
// for each parameter which rank holds which block (shardrt/layout_grid.h). The run
// writes it at its end; `--report-page FILE --from-metrics M.jsonl` makes it again
// from a metrics file without running.
#ifndef SHARDRT_LIB_DRIVER_PAGE_H
#define SHARDRT_LIB_DRIVER_PAGE_H

#include "driver_manifest.h"

#include <string>
#include <vector>

namespace shardrt {

/// Writes the page to `path` from the metrics lines (JSON objects, as the metrics file
/// holds them) and the run's summary (a JSON object, or empty). False after a message
/// when it cannot be written.
bool writeReportPage(const std::string &path, const Manifest &manifest,
                     const std::vector<std::string> &metrics, const std::string &summary);

/// --from-metrics: the page from the metrics file `metricsPath`. The exit status.
int writeReportPageFromMetrics(const std::string &path, const Manifest &manifest,
                               const std::string &metricsPath);

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_PAGE_H
