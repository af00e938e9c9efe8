// Fashion-MNIST (Xiao, Rasul, Vollgraf 2017) as the driver feeds it: the four IDX files
// of the distribution, gzip-compressed, in one folder (Debian's dataset-fashion-mnist
// installs them in /usr/share/datasets/fashion-mnist).
#ifndef SHARDRT_LIB_DATASET_H
#define SHARDRT_LIB_DATASET_H

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardrt {

/// An example's image is [28, 28, 1] (height, width, channels); labels are 0..9.
constexpr int64_t kImageRows = 28, kImageCols = 28, kImagePixels = kImageRows * kImageCols;
constexpr int kNumClasses = 10;

/// One split of the dataset, as stored: one byte per pixel and per label.
struct Dataset {
  int64_t count = 0;
  std::vector<uint8_t> pixels; // count x 28 x 28, row-major
  std::vector<uint8_t> labels; // count
};

struct FashionMnist {
  Dataset train, test;
};

/// A missing, truncated or malformed file; what() names the file and what is wrong.
struct DatasetError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Reads train-{images-idx3,labels-idx1}-ubyte.gz and t10k-... from `folder`, and
/// checks them: IDX magic numbers, 28x28 images, as many labels as images, labels in
/// 0..9, nothing missing or left over. Throws DatasetError.
FashionMnist readFashionMnist(const std::string &folder);

} // namespace shardrt

#endif // SHARDRT_LIB_DATASET_H
