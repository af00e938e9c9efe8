// The scratch buffer: mmap'd, huge-page backed, grown (geometrically, or to the size
// asked), never shrunk.
#include "scratch.h"
#include "mesh/mesh.h"

#include "shardrt/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace shardrt {

std::byte *ScratchBuffer::reserve(size_t bytes) {
  std::byte *memory = tryReserve(bytes);
  if (!memory && bytes)
    fatal("cannot map %zu bytes of scratch memory: %s", bytes, std::strerror(errno));
  return memory;
}

std::byte *ScratchBuffer::tryReserve(size_t bytes) {
  if (bytes <= capacity_)
    return data_;
  // Doubling keeps a run of ever larger calls to O(log) growths; whole huge pages
  // because the kernel backs only aligned 2 MiB ranges with them.
  size_t wanted = doubles_ ? std::max(bytes, 2 * capacity_) : bytes;
  wanted = size_t(inHugePages(int64_t(wanted)));
  release();
  void *memory = mmap(nullptr, wanted, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED)
    return nullptr;
  madvise(memory, wanted, MADV_HUGEPAGE); // advice only: without THP it still works
  data_ = static_cast<std::byte *>(memory);
  capacity_ = wanted;
  return data_;
}

void ScratchBuffer::release() {
  if (data_)
    munmap(data_, capacity_);
  data_ = nullptr;
  capacity_ = 0;
}

ScratchBuffer &scratch() {
  static ScratchBuffer buffer;
  return buffer;
}

} // namespace shardrt
