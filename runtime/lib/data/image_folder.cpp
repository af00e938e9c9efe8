// Image folders in torchvision's ImageFolder layout, FOLDER/CLASS/IMAGE, decoded with
// stb_image and resized with stb_image_resize (Debian's libstb).
//
// Opening lists the folders and reads the first bytes of every file, so that a stray
// file fails at once; the pixels are decoded only when the caller has the buffer for
// them. Resizing treats the bytes as numbers (no sRGB curve): a box filter where an axis
// shrinks, which averages the pixels each output pixel covers, and a triangle (bilinear)
// one where it grows.
#include "reading.h"

#include "random/prng.h"

#include <stb_image.h>
#include <stb_image_resize.h>

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>

namespace shardrt::data {
namespace {

/// Larger sides are surely a mistake, and stb_image_resize takes sizes as int.
constexpr int64_t kMaxSide = 1 << 16;

const char *const kLayout = "(an image folder is FOLDER/CLASS/IMAGE)";

/// The entries of `folder` (ending in '/'), sorted, without hidden ones (".", "..",
/// ".DS_Store").
std::vector<std::string> listFolder(const std::string &folder) {
  DIR *dir = ::opendir(folder.c_str());
  if (!dir)
    fail(quoted(folder), errno == ENOENT    ? "no such folder"
                         : errno == ENOTDIR ? "not a folder"
                                            : "cannot list it: " + systemError());
  std::vector<std::string> names;
  while (const dirent *entry = ::readdir(dir))
    if (entry->d_name[0] != '.')
      names.push_back(entry->d_name);
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

/// Whether `path` is a folder (following links); false for anything else, which the
/// caller then opens as a file and reports.
bool isFolder(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

/// PNG and JPEG by their magic bytes, whatever the file's name.
bool isImage(const std::string &path) {
  const std::string start = InputFile(path).read(0, 4);
  return start == "\x89PNG" || start.compare(0, 3, "\xff\xd8\xff") == 0;
}

stbir_filter filterFor(int from, int64_t to) {
  return to < from ? STBIR_FILTER_BOX : STBIR_FILTER_TRIANGLE;
}

/// Decodes `path` into `out`: height x width x channels bytes.
void decodeImage(const std::string &path, int64_t height, int64_t width, int64_t channels,
                 uint8_t *out) {
  const InputFile file(path);
  if (file.size() > INT_MAX)
    fail(quoted(path), "too large to decode: " + std::to_string(file.size()) + " bytes");
  const std::string bytes = file.read(0, file.size());
  int fileWidth = 0, fileHeight = 0, fileChannels = 0;
  std::unique_ptr<stbi_uc, void (*)(void *)> pixels(
      stbi_load_from_memory(reinterpret_cast<const stbi_uc *>(bytes.data()), int(bytes.size()),
                            &fileWidth, &fileHeight, &fileChannels, int(channels)),
      stbi_image_free);
  if (!pixels)
    fail(quoted(path), std::string("cannot decode it: ") + stbi_failure_reason());
  if (fileWidth == width && fileHeight == height) {
    std::memcpy(out, pixels.get(), size_t(height * width * channels));
    return;
  }
  if (!stbir_resize(pixels.get(), fileWidth, fileHeight, 0, out, int(width), int(height), 0,
                    STBIR_TYPE_UINT8, int(channels), STBIR_ALPHA_CHANNEL_NONE, 0, STBIR_EDGE_CLAMP,
                    STBIR_EDGE_CLAMP, filterFor(fileWidth, width), filterFor(fileHeight, height),
                    STBIR_COLORSPACE_LINEAR, nullptr))
    fail(quoted(path), "cannot resize it from " + std::to_string(fileWidth) + "x" +
                           std::to_string(fileHeight) + ": out of memory");
}

} // namespace

ImageFolderPlan openImageFolder(const std::string &folder, int64_t height, int64_t width,
                                int64_t channels) {
  const std::string root = folder.empty() || folder.back() != '/' ? folder + "/" : folder;
  ImageFolderPlan plan;
  plan.images.what = quoted(root) + " (image folder, images)";
  plan.labels.what = quoted(root) + " (image folder, labels)";
  if (height < 1 || height > kMaxSide || width < 1 || width > kMaxSide)
    fail(plan.images.what, "height " + std::to_string(height) + " and width " +
                               std::to_string(width) + ": each must be in 1.." +
                               std::to_string(kMaxSide));
  if (channels != 1 && channels != 3)
    fail(plan.images.what, "channels must be 1 (grey) or 3 (RGB), not " + std::to_string(channels));

  struct Example {
    uint64_t hash;
    std::string name; // CLASS/FILE
    int32_t label;
  };
  std::vector<Example> examples;
  for (const std::string &name : listFolder(root)) {
    const std::string classFolder = root + name + "/";
    if (!isFolder(classFolder))
      fail(quoted(root + name), std::string("a file directly in the image folder, not in a "
                                            "class subfolder ") +
                                    kLayout);
    const std::vector<std::string> files = listFolder(classFolder);
    if (files.empty())
      fail(quoted(classFolder), "the class folder holds no images");
    for (const std::string &file : files) {
      const std::string path = classFolder + file;
      if (isFolder(path))
        fail(quoted(path + "/"), std::string("a folder inside a class folder ") + kLayout);
      if (!isImage(path))
        fail(quoted(path), "not a PNG or JPEG image (by its first bytes)");
      const std::string exampleName = name + "/" + file;
      examples.push_back({fnv1a64(exampleName.c_str()), exampleName, int32_t(plan.classes.size())});
    }
    plan.classes.push_back(name);
  }
  if (plan.classes.empty())
    fail(quoted(root), std::string("holds no class subfolders ") + kLayout);
  std::sort(examples.begin(), examples.end(), [](const Example &a, const Example &b) {
    return a.hash != b.hash ? a.hash < b.hash : a.name < b.name;
  });

  std::vector<std::string> paths;
  std::vector<int32_t> labels;
  for (const Example &example : examples) {
    paths.push_back(root + example.name);
    labels.push_back(example.label);
  }
  const int64_t count = int64_t(examples.size());
  plan.images.type = ElementType::U8;
  plan.images.shape = {count, height, width, channels};
  checkShape(plan.images);
  plan.images.produce = [paths, height, width, channels](uint8_t *out) {
    const size_t imageBytes = size_t(height * width * channels);
    for (const std::string &path : paths) {
      decodeImage(path, height, width, channels, out);
      out += imageBytes;
    }
  };
  plan.labels.type = ElementType::I32;
  plan.labels.shape = {count};
  plan.labels.produce = [labels](uint8_t *out) {
    std::memcpy(out, labels.data(), labels.size() * sizeof(int32_t));
  };
  return plan;
}

} // namespace shardrt::data
