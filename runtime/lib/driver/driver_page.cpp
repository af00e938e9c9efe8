// See driver_page.h. Everything is drawn here, as static HTML and SVG.
#include "driver_page.h"
#include "driver_layout.h"

#include "shardrt/layout_grid.h"
#include "shardrt/program_limits.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace shardrt {
namespace {

using json = nlohmann::json;

const char *const kPalette[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3",
                                "#fdb462", "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd"};

std::string escape(const std::string &text) {
  std::string out;
  for (char c : text)
    out += c == '<'   ? "&lt;"
           : c == '>' ? "&gt;"
           : c == '&' ? "&amp;"
           : c == '"' ? "&quot;"
                      : std::string(1, c);
  return out;
}

std::string number(double value, const char *format = "%.4g") {
  char text[32];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

/// A cell's text: a string as is, anything else as JSON.
std::string cellText(const json &value) {
  return value.is_string() ? value.get<std::string>() : value.is_null() ? "" : value.dump();
}

struct Series {
  std::string label, color;
  std::vector<std::pair<double, double>> points; // (step, value)
  bool dots = false;                             // evaluations: points, not a line
};

/// An SVG chart of `series` against the step.
std::string chart(const std::string &id, const std::string &title,
                  const std::vector<Series> &series) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const Series &s : series)
    for (auto [x, y] : s.points) {
      x0 = std::min(x0, x), x1 = std::max(x1, x);
      y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  if (x0 > x1)
    return "";
  if (x1 == x0)
    x1 = x0 + 1;
  if (y1 == y0)
    y1 = y0 + std::max(1e-6, std::fabs(y0) * 0.1);
  const double w = 640, h = 260, left = 64, right = 16, top = 24, bottom = 36;
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * (w - left - right); };
  auto py = [&](double y) { return h - bottom - (y - y0) / (y1 - y0) * (h - top - bottom); };
  std::ostringstream svg;
  svg << "<svg id=\"" << escape(id) << "\" class=\"chart\" width=\"" << w << "\" height=\"" << h
      << "\" viewBox=\"0 0 " << w << " " << h << "\" xmlns=\"http://www.w3.org/2000/svg\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
      << "<text x=\"" << left << "\" y=\"16\" font-size=\"13\">" << escape(title) << "</text>\n"
      << "<line x1=\"" << left << "\" y1=\"" << h - bottom << "\" x2=\"" << w - right << "\" y2=\""
      << h - bottom << "\" stroke=\"#444\"/>\n"
      << "<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\""
      << h - bottom << "\" stroke=\"#444\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double y = y0 + (y1 - y0) * i / 4, x = x0 + (x1 - x0) * i / 4;
    svg << "<line x1=\"" << left << "\" y1=\"" << py(y) << "\" x2=\"" << w - right << "\" y2=\""
        << py(y) << "\" stroke=\"#e4e4e4\"/>"
        << "<text x=\"" << left - 6 << "\" y=\"" << py(y) + 4
        << "\" font-size=\"11\" text-anchor=\"end\">" << number(y) << "</text>"
        << "<text x=\"" << px(x) << "\" y=\"" << h - bottom + 16
        << "\" font-size=\"11\" text-anchor=\"middle\">" << number(std::round(x), "%.0f")
        << "</text>\n";
  }
  svg << "<text x=\"" << w - right << "\" y=\"" << h - 4
      << "\" font-size=\"11\" text-anchor=\"end\">step</text>\n";
  double legendX = w - right - 150;
  for (const Series &s : series) {
    if (s.points.empty())
      continue;
    if (s.dots) {
      for (auto [x, y] : s.points)
        svg << "<circle class=\"" << escape(s.label) << "\" cx=\"" << px(x) << "\" cy=\"" << py(y)
            << "\" r=\"3.5\" fill=\"" << s.color << "\"/>";
      svg << "\n";
    } else {
      svg << "<polyline class=\"" << escape(s.label) << "\" fill=\"none\" stroke=\"" << s.color
          << "\" stroke-width=\"1.5\" points=\"";
      for (auto [x, y] : s.points)
        svg << px(x) << "," << py(y) << " ";
      svg << "\"/>\n";
    }
    svg << "<rect x=\"" << legendX << "\" y=\"10\" width=\"10\" height=\"10\" fill=\"" << s.color
        << "\"/><text x=\"" << legendX + 14 << "\" y=\"19\" font-size=\"11\">" << escape(s.label)
        << "</text>\n";
    legendX += 75;
  }
  svg << "</svg>\n";
  return svg.str();
}

/// One chart per quantity: the loss first, then the metrics; training's line and the
/// evaluations' points together.
std::string curves(const std::vector<json> &records) {
  // The lines' own keys (program_limits.h), not a model's results.
  std::set<std::string> notCurves(shardrt::kTrainLineKeys.begin(), shardrt::kTrainLineKeys.end());
  notCurves.insert(shardrt::kEvalLineKeys.begin(), shardrt::kEvalLineKeys.end());
  std::vector<std::string> names = {"loss"};
  std::map<std::string, Series> train, eval;
  for (const json &record : records) {
    const bool isEval = record.value("kind", "") == "eval";
    if (!record.contains("step") || !record["step"].is_number())
      continue;
    for (const auto &[name, value] : record.items()) {
      if (notCurves.count(name) || !value.is_number())
        continue;
      if (std::find(names.begin(), names.end(), name) == names.end())
        names.push_back(name);
      (isEval ? eval : train)[name].points.push_back(
          {record["step"].get<double>(), value.get<double>()});
    }
  }
  std::string html;
  for (const std::string &name : names) {
    Series &t = train[name], &e = eval[name];
    t.label = "train", t.color = "#1f77b4";
    e.label = "eval", e.color = "#d62728", e.dots = true;
    html += chart("curve-" + name, name, {t, e});
  }
  return html.empty() ? "<p>No metrics were recorded.</p>\n" : html;
}

std::string table(const std::string &id, const std::vector<std::string> &header,
                  const std::vector<std::vector<std::string>> &rows) {
  std::string html = "<table id=\"" + escape(id) + "\">\n<tr>";
  for (const std::string &cell : header)
    html += "<th>" + escape(cell) + "</th>";
  html += "</tr>\n";
  for (const std::vector<std::string> &row : rows) {
    html += "<tr>";
    for (const std::string &cell : row)
      html += "<td>" + escape(cell) + "</td>";
    html += "</tr>\n";
  }
  return html + "</table>\n";
}

std::string planSections(const std::string &planText) {
  if (planText.empty())
    return "<p>The program carries no communication plan.</p>\n";
  const json plan = json::parse(planText);
  std::vector<std::vector<std::string>> memory;
  const json memoryPerRank = plan.value("memory_per_rank", json::object());
  for (const auto &[what, bytes] : memoryPerRank.items())
    memory.push_back({what, bytes.is_number() ? bytesText(bytes.get<int64_t>()) : cellText(bytes)});
  std::vector<std::vector<std::string>> collectives;
  for (const json &c : plan.value("collectives_per_step", json::array())) {
    std::string what = c.value("gradient_of", json()).is_string()
                           ? "gradient of " + c["gradient_of"].get<std::string>()
                           : cellText(c.value("parameters", json()));
    std::string causes;
    for (const json &cause : c.value("caused_by", json::array()))
      causes += (causes.empty() ? "" : "; ") + cellText(cause);
    collectives.push_back(
        {cellText(c.value("count", json())), cellText(c.value("kind", json())),
         cellText(c.value("mesh_axes", json())), cellText(c.value("shape", json())),
         bytesText(c.value("bytes", int64_t(0))), cellText(c.value("source", json())), what, causes,
         c.value("traffic", true) ? bytesText(c.value("sent_bytes", int64_t(0)))
                                  : "local: no traffic"});
  }
  std::string html = "<h2>Memory per rank</h2>\n" + table("memory", {"what", "bytes"}, memory);
  html += "<h2>Communication plan</h2>\n<p>" + escape(cellText(plan.value("step", json()))) +
          " step: " + escape(bytesText(plan.value("collective_bytes_per_step", int64_t(0)))) +
          " of collectives per rank; each rank sends " +
          escape(bytesText(plan.value("sent_bytes_per_rank_per_step", int64_t(0)))) +
          " by ring algorithms.</p>\n";
  html += table("plan",
                {"count", "collective", "over", "shape", "bytes", "source", "carries", "made by",
                 "sent per rank"},
                collectives);
  return html;
}

/// "[none, model]"
std::string splitText(const TensorSpec &spec, const Manifest &manifest) {
  std::string text = "[";
  for (size_t d = 0; d < spec.split.size(); ++d) {
    std::string axes;
    for (int axis : spec.split[d])
      axes += (axes.empty() ? "" : ", ") + manifest.axisNames[axis];
    text += (d ? ", " : "") + (axes.empty()               ? std::string("none")
                               : spec.split[d].size() > 1 ? "(" + axes + ")"
                                                          : axes);
  }
  return text + "]";
}

/// Each parameter's blocks as a grid of cells, each listing the ranks that hold it.
std::string layouts(const Manifest &manifest) {
  std::string html = "<div id=\"layouts\">\n";
  std::set<std::string> drawn;
  for (const TensorSpec &param : manifest.params) {
    if (!drawn.insert(param.name).second)
      continue; // the other layers of a stack are laid out alike
    const LayoutGrid grid = layoutGrid(manifest.axisSizes, param.split);
    std::string shape;
    for (int64_t size : param.globalShape)
      shape += (shape.empty() ? "" : ", ") + std::to_string(size);
    const double width = 480, cellW = width / double(grid.columns),
                 cellH = std::min(48.0, 240.0 / double(grid.rows));
    std::ostringstream svg;
    svg << "<svg width=\"" << width + 2 << "\" height=\"" << cellH * grid.rows + 2
        << "\" xmlns=\"http://www.w3.org/2000/svg\">\n";
    for (int64_t r = 0; r < grid.rows; ++r)
      for (int64_t c = 0; c < grid.columns; ++c) {
        const std::vector<int64_t> &ranks = grid.ranks[r * grid.columns + c];
        std::string label;
        for (int64_t rank : ranks)
          label += (label.empty() ? "" : " ") + std::to_string(rank);
        svg << "<rect class=\"block\" x=\"" << 1 + c * cellW << "\" y=\"" << 1 + r * cellH
            << "\" width=\"" << cellW << "\" height=\"" << cellH << "\" fill=\""
            << kPalette[(r * grid.columns + c) % 10] << "\" stroke=\"#333\"/>"
            << "<text x=\"" << 1 + (c + 0.5) * cellW << "\" y=\"" << 1 + (r + 0.5) * cellH + 4
            << "\" font-size=\"12\" text-anchor=\"middle\">" << escape(label) << "</text>\n";
      }
    svg << "</svg>\n";
    html += "<div class=\"layout\" id=\"layout-" + escape(param.name) + "\"><h3>" +
            escape(param.name) + " f32[" + shape + "] " + escape(splitText(param, manifest)) +
            "</h3>\n" + svg.str() + "</div>\n";
  }
  return html + "</div>\n";
}

std::string summarySection(const std::string &summaryText) {
  if (summaryText.empty())
    return "";
  const json summary = json::parse(summaryText);
  std::vector<std::vector<std::string>> rows;
  for (const auto &[key, value] : summary.items())
    if (!value.is_object() && !value.is_array() && key != "model")
      rows.push_back({key, cellText(value)});
  if (summary.contains("eval") && summary["eval"].is_object())
    for (const auto &[key, value] : summary["eval"].items())
      rows.push_back({"eval " + key, cellText(value)});
  return "<h2>Summary</h2>\n" + table("summary", {"field", "value"}, rows);
}

} // namespace

bool writeReportPage(const std::string &path, const Manifest &manifest,
                     const std::vector<std::string> &metrics, const std::string &summary) {
  std::vector<json> records;
  for (const std::string &line : metrics)
    records.push_back(json::parse(line));
  std::string mesh;
  for (size_t a = 0; a < manifest.axisNames.size(); ++a)
    mesh += (a ? ", " : "") + manifest.axisNames[a] + " = " + std::to_string(manifest.axisSizes[a]);
  std::ostringstream page;
  page << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>"
       << escape(manifest.model) << ": run report</title>\n<style>\n"
       << "body { font-family: sans-serif; margin: 24px; color: #222; }\n"
       << "table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }\n"
       << "td, th { border: 1px solid #bbb; padding: 3px 8px; text-align: left; }\n"
       << "th { background: #eee; } .chart { margin: 4px 12px 12px 0; }\n"
       << ".layout { display: inline-block; margin: 0 24px 16px 0; vertical-align: top; }\n"
       << "h3 { font-size: 14px; font-weight: normal; font-family: monospace; }\n"
       << "</style></head><body>\n<h1>" << escape(manifest.model) << "</h1>\n<p id=\"mesh\">mesh ("
       << escape(mesh) << ")</p>\n"
       << summarySection(summary) << "<h2>Curves</h2>\n<div id=\"curves\">\n"
       << curves(records) << "</div>\n"
       << planSections(manifest.plan)
       << "<h2>Layouts</h2>\n<p>Which rank holds which block of each parameter (ranks "
          "numbered row-major over the mesh axes), as jax.debug.visualize_array_sharding "
          "draws it.</p>\n"
       << layouts(manifest) << "</body></html>\n";
  std::ofstream file(path);
  file << page.str();
  file.close();
  if (!file) {
    std::fprintf(stderr, "shardrt: error: --report-page: cannot write '%s': %s\n", path.c_str(),
                 std::strerror(errno));
    return false;
  }
  std::fprintf(stderr, "report page: %s\n", path.c_str());
  return true;
}

int writeReportPageFromMetrics(const std::string &path, const Manifest &manifest,
                               const std::string &metricsPath) {
  std::ifstream file(metricsPath);
  if (!file) {
    std::fprintf(stderr, "shardrt: error: --from-metrics: cannot read '%s': %s\n",
                 metricsPath.c_str(), std::strerror(errno));
    return 1;
  }
  std::vector<std::string> lines;
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    if (line.empty())
      continue;
    if (!json::accept(line) || !json::parse(line).is_object()) {
      std::fprintf(stderr, "shardrt: error: --from-metrics: '%s' line %d is not a JSON object\n",
                   metricsPath.c_str(), number);
      return 1;
    }
    lines.push_back(line);
  }
  return writeReportPage(path, manifest, lines, "") ? 0 : 1;
}

} // namespace shardrt
