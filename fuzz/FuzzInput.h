//===- FuzzInput.h - a fuzzer's input as a file ---------------*- C++ -*-===//
//
// The readers under fuzz take paths, as shardc and the driver call them: each
// input is written to a file in a folder of this process's own, made once.
//
//===----------------------------------------------------------------------===//

#ifndef SHARDC_FUZZ_FUZZINPUT_H
#define SHARDC_FUZZ_FUZZINPUT_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace shardc::fuzz {

/// The folder, made on first use under $TMPDIR (or /tmp) and removed at exit.
inline const std::string &scratchFolder() {
  static const std::string folder = [] {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/shardc-fuzz.XXXXXX";
    if (!mkdtemp(pattern.data())) {
      std::perror("shardc fuzzer: mkdtemp");
      std::abort();
    }
    static std::string removed = pattern;
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(removed, ignored);
    });
    return pattern;
  }();
  return folder;
}

/// Writes `size` bytes to `name` in the scratch folder and returns its path.
inline std::string writeFile(const char *name, const uint8_t *data, size_t size) {
  std::string path = scratchFolder() + "/" + name;
  std::FILE *file = std::fopen(path.c_str(), "wb");
  if (!file || (size && std::fwrite(data, 1, size, file) != size) || std::fclose(file) != 0) {
    std::perror(("shardc fuzzer: " + path).c_str());
    std::abort();
  }
  return path;
}

inline std::string writeFile(const char *name, const std::string &text) {
  return writeFile(name, reinterpret_cast<const uint8_t *>(text.data()), text.size());
}

} // namespace shardc::fuzz

#endif
