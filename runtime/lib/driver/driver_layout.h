// Where a rank's block of a tensor lies: its local shape and its offset in the whole
// tensor, from the tensor's split (manifest) and the rank's mesh coordinates.
//
// A dimension split over the axes (a, b), a major, has size / (size_a * size_b) per
// rank, and the rank at coordinates c holds block c_a * size_b + c_b of it. Ranks that
// differ only on axes that split nothing hold the same block.
#ifndef SHARDRT_LIB_DRIVER_LAYOUT_H
#define SHARDRT_LIB_DRIVER_LAYOUT_H

#include "driver_manifest.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace shardrt {

using Shape = std::vector<int64_t>;

inline int64_t numElements(const Shape &shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

/// `512 B`, `30.62 KiB`, `3.06 MiB`, `27.66 GiB`, as the compiler's report writes sizes.
inline std::string bytesText(int64_t bytes) {
  char text[32];
  const char *units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) {
    std::snprintf(text, sizeof text, "%lld B", (long long)bytes);
    return text;
  }
  double value = double(bytes) / 1024;
  int unit = 0;
  for (; value >= 1024 && unit < 3; ++unit)
    value /= 1024;
  std::snprintf(text, sizeof text, "%.2f %s", value, units[unit]);
  return text;
}

/// `[3136, 256]`, as messages and the reshard plan write shapes.
inline std::string shapeText(const Shape &shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "]";
}

inline Shape localShape(const TensorSpec &spec, const Shape &meshSizes) {
  Shape local = spec.shape;
  for (size_t d = 0; d < local.size(); ++d)
    for (int axis : spec.split[d])
      local[d] /= meshSizes[axis];
  return local;
}

/// The offset, in the whole tensor, of the block held at mesh coordinates `coords`.
inline Shape blockOffset(const TensorSpec &spec, const Shape &meshSizes, const Shape &coords) {
  Shape local = localShape(spec, meshSizes), offset(spec.shape.size());
  for (size_t d = 0; d < offset.size(); ++d) {
    int64_t block = 0;
    for (int axis : spec.split[d])
      block = block * meshSizes[axis] + coords[axis];
    offset[d] = block * local[d];
  }
  return offset;
}

/// Whether the rank at `coords` holds the first copy of its block: coordinate 0 on every
/// axis that splits nothing. Rank 0 gathers results from these ranks only.
inline bool holdsFirstCopy(const TensorSpec &spec, const Shape &coords) {
  std::vector<bool> used(coords.size(), false);
  for (const std::vector<int> &axes : spec.split)
    for (int axis : axes)
      used[axis] = true;
  for (size_t a = 0; a < coords.size(); ++a)
    if (!used[a] && coords[a] != 0)
      return false;
  return true;
}

/// The mesh coordinates of `rank`: row-major, the last axis fastest.
inline Shape rankCoords(int64_t rank, const Shape &meshSizes) {
  Shape coords(meshSizes.size());
  for (size_t a = meshSizes.size(); a-- > 0;) {
    coords[a] = rank % meshSizes[a];
    rank /= meshSizes[a];
  }
  return coords;
}

/// Where the element at row-major index `index` of a tensor of shape `global` lies in
/// the block of shape `local` at `offset`: its row-major index there, or -1 when the
/// block does not hold it.
inline int64_t localIndex(const Shape &global, const Shape &local, const Shape &offset,
                          int64_t index) {
  int64_t position = 0, stride = 1;
  for (size_t d = global.size(); d-- > 0;) {
    const int64_t at = index % global[d] - offset[d];
    index /= global[d];
    if (at < 0 || at >= local[d])
      return -1;
    position += at * stride;
    stride *= local[d];
  }
  return position;
}

/// Calls visit(localStart, globalStart, length) for every run of the block of shape
/// `local` at `offset` in a tensor of shape `global` that is contiguous in both, in the
/// block's row-major order. A run is a row along the last dimension, extended over the
/// trailing dimensions that the block holds whole (an unsplit image is one run per
/// example). A scalar is one run of one.
template <typename Visit>
void forEachRow(const Shape &global, const Shape &local, const Shape &offset, Visit visit) {
  const int ndim = static_cast<int>(global.size());
  if (ndim == 0) {
    visit(int64_t(0), int64_t(0), int64_t(1));
    return;
  }
  if (numElements(local) == 0)
    return;
  Shape globalStride(ndim, 1);
  for (int d = ndim - 2; d >= 0; --d)
    globalStride[d] = globalStride[d + 1] * global[d + 1];
  int first = ndim - 1; // the runs span dimensions first.. of the block
  while (first > 0 && local[first] == global[first])
    --first;
  const int64_t length = local[first] * globalStride[first];
  Shape position(first, 0); // the run's index over the dimensions before `first`
  for (int64_t localStart = 0;; localStart += length) {
    int64_t globalStart = offset[first] * globalStride[first];
    for (int d = 0; d < first; ++d)
      globalStart += (offset[d] + position[d]) * globalStride[d];
    visit(localStart, globalStart, length);
    int d = first - 1;
    while (d >= 0 && ++position[d] == local[d])
      position[d--] = 0;
    if (d < 0)
      return;
  }
}

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_LAYOUT_H
