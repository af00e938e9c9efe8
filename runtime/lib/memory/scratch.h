// The runtime's one scratch buffer, reused by every collective and kernel.
//
// Why: the first touch of a fresh page costs far more than a memcpy of it, and a
// temporary allocated per call, which glibc hands back to the kernel when it is large,
// pays that on every call (bench/kernels measures it). The buffer only grows
// (geometrically, so a sequence of growing calls costs little) and asks for transparent
// huge pages, which are much cheaper to touch first.
#ifndef SHARDRT_LIB_SCRATCH_H
#define SHARDRT_LIB_SCRATCH_H

#include "shardrt/scratch_regions.h"

#include <array>
#include <cstddef>

namespace shardrt {

class ScratchBuffer {
public:
  /// `doubles`: grows to at least twice its size (for calls of ever new sizes);
  /// otherwise to the size asked for, in whole huge pages.
  explicit ScratchBuffer(bool doubles = true) : doubles_(doubles) {}
  ScratchBuffer(const ScratchBuffer &) = delete;
  ScratchBuffer &operator=(const ScratchBuffer &) = delete;
  ~ScratchBuffer() { release(); }

  /// Consecutive, 64-byte aligned regions of the given sizes, valid until the next
  /// call. Their contents are not kept from call to call.
  template <size_t N> std::array<std::byte *, N> regions(const ScratchRegions<N> &bytes) {
    std::array<size_t, N> offsets;
    size_t total = 0;
    for (size_t i = 0; i < N; ++i) {
      offsets[i] = total;
      total += alignedRegion(bytes[i]);
    }
    std::byte *base = reserve(total);
    std::array<std::byte *, N> result;
    for (size_t i = 0; i < N; ++i)
      result[i] = base + offsets[i];
    return result;
  }

  /// At least `bytes` bytes, 64-byte aligned, valid until the next call; null, with
  /// the buffer empty, when the system has no memory for them.
  std::byte *tryReserve(size_t bytes);

  /// Gives the memory back to the system.
  void release();

  /// The bytes mapped now.
  size_t capacity() const { return capacity_; }

private:
  std::byte *reserve(size_t bytes);

  std::byte *data_ = nullptr;
  size_t capacity_ = 0;
  bool doubles_;
};

/// The runtime's scratch buffer.
ScratchBuffer &scratch();

} // namespace shardrt

#endif // SHARDRT_LIB_SCRATCH_H
