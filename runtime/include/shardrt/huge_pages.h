/* huge_pages.h - the unit in which the runtime maps its long-lived buffers (the step
 * arena, the scratch buffer: runtime/lib/memory/scratch.cpp), whole transparent huge pages,
 * all of each resident once touched; shardc's --report counts the step arena so.
 * C++17, header only. */
#ifndef SHARDRT_HUGE_PAGES_H
#define SHARDRT_HUGE_PAGES_H

#include <cstdint>

namespace shardrt {

inline constexpr int64_t kHugePageBytes = int64_t(2) << 20;

/* `bytes` rounded up to whole huge pages (saturating at INT64_MAX's last page). */
inline constexpr int64_t inHugePages(int64_t bytes) {
  return bytes > INT64_MAX - (kHugePageBytes - 1)
             ? INT64_MAX / kHugePageBytes * kHugePageBytes
             : (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

} // namespace shardrt

#endif
