/* program_limits.h - what the driver accepts of a compiled program's own description.
 *
 * The driver checks its manifest against these at start-up; shardc checks the same
 * limits at compile time, at the place in the source, so that a program that compiles
 * is never refused when it starts. C++17, header only.
 */
#ifndef SHARDRT_PROGRAM_LIMITS_H
#define SHARDRT_PROGRAM_LIMITS_H

#include <array>
#include <climits>
#include <cstdint>
#include <string_view>

namespace shardrt {

/* A collective names its mesh axes by the bits of an int. */
inline constexpr int kMaxMeshAxes = 31;
/* MPI numbers ranks with an int. */
inline constexpr int64_t kMaxRanks = INT_MAX;

/* Keys the driver writes on every metrics line besides the results; a train result
 * (the loss or a metric) or a per-example eval result of one of these names would
 * collide with them. After the first train result (written as "loss"), "loss" is taken
 * too. */
inline constexpr std::array<std::string_view, 6> kTrainLineKeys = {
    "kind", "step", "epoch", "images_per_second", "seconds_per_step", "nonfinite_steps"};
inline constexpr std::array<std::string_view, 4> kEvalLineKeys = {"kind", "step", "epoch",
                                                                  "examples"};

} // namespace shardrt

#endif
