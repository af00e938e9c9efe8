// Arrays of examples in the file formats users keep their data in: NumPy .npy and
// .npz, safetensors, IDX (gzip or not), image folders (torchvision's ImageFolder
// layout) and flat token files. Nothing here knows about ranks, inputs or meshes:
// driver/driver_data.cpp binds model inputs to these arrays and shares them between
// the ranks of a host.
//
// Opening a source reads its headers only and returns an ArrayPlan: the array's element
// type and shape (dimension 0 indexes examples) and either where its raw little-endian
// elements lie in a file (to be memory-mapped as they are) or a function that produces
// them (inflating, decoding) into a buffer the caller provides, once per host.
#ifndef SHARDRT_LIB_DATA_ARRAY_FILE_H
#define SHARDRT_LIB_DATA_ARRAY_FILE_H

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardrt::data {

/// Element types a data file may hold, little-endian.
enum class ElementType { U8, U16, U32, I32, I64, F32, F64 };

size_t elementSize(ElementType type);
/// NumPy's names: "uint8", "uint16", "uint32", "int32", "int64", "float32", "float64".
const char *elementTypeName(ElementType type);

/// A file that cannot be used: missing, unreadable, malformed, or not what was asked
/// for. what() starts with the file's path in quotes and says what is wrong, e.g.
/// "'x.npy': truncated: its header announces 600 float32 elements (2400 bytes), but 1200
/// bytes follow it".
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ArrayPlan {
  ElementType type = ElementType::U8;
  std::vector<int64_t> shape; // dimension 0: examples; never empty, no size 0
  /// What it is, for messages: "'train.npz' member 'x_train'",
  /// "'pets/' (image folder, labels)".
  std::string what;

  /// Stored raw: the elements are bytes [offset, offset + bytes()) of `path` (empty when
  /// produced).
  std::string path;
  uint64_t offset = 0;
  /// Not stored raw: writes the bytes() bytes of the array to `out`; throws DataError
  /// (e.g. a corrupt deflate stream, an image that does not decode, naming the file).
  /// Empty when the array is stored raw.
  std::function<void(uint8_t *out)> produce;

  int64_t count() const; // elements
  uint64_t bytes() const;
};

/// NumPy .npy, format versions 1.0, 2.0 and 3.0: C order, little-endian (or
/// single-byte) dtypes among ElementType; shape () is refused (an example needs a
/// dimension 0). Checks the magic, the header's dict, and that the file holds exactly
/// the announced bytes after the header.
ArrayPlan openNpy(const std::string &path);

/// One member (`name` without ".npy", as numpy.savez names them) of a .npz archive,
/// stored or deflated (libzip); the member is a .npy as above. A missing member names
/// the ones there are.
ArrayPlan openNpz(const std::string &path, const std::string &member);

/// One tensor of a safetensors file (8-byte little-endian header length, JSON header,
/// data). Dtypes U8, U16, U32, I32, I64, F32, F64; a missing tensor names the ones
/// there are; offsets must lie inside the data section.
ArrayPlan openSafetensors(const std::string &path, const std::string &tensor);

/// An IDX file (LeCun's MNIST format: big-endian magic 0x000008TT 0x0N, N big-endian
/// uint32 sizes, elements row-major), gzip-compressed or not (told apart by the gzip
/// magic bytes). Element type codes 0x08 (u8), 0x0C (i32, big-endian in the file:
/// produced byte-swapped), 0x0D (f32, byte-swapped), 0x0E (f64); 0x09 (i8) and 0x0B
/// (i16) are refused. Only a plain u8 file is raw. Trailing bytes after the elements are
/// an error (for gzip, found when produced).
ArrayPlan openIdx(const std::string &path);

/// A flat file of tokens of `type` (U8, U16 or U32; nanoGPT's train.bin is uint16); a
/// text file is read as U8 bytes (vocabulary 256). Shape [tokens]; another type, an
/// empty file or a size that is not a multiple of the element size is an error.
ArrayPlan openTokens(const std::string &path, ElementType type);

/// An image folder in torchvision's ImageFolder layout: `folder/CLASS/FILE`, one
/// subfolder per class (hidden entries ignored), PNG and JPEG files (by their magic
/// bytes, any extension; other files are an error that names them). Classes are the
/// sorted subfolder names, label = index. Examples are ordered by the FNV-1a 64 hash of
/// "CLASS/FILE" (ties by name): a fixed, listing-independent order in which classes mix,
/// so that a slice of it (a train/test split by fraction) holds every class.
struct ImageFolderPlan {
  std::vector<std::string> classes;
  ArrayPlan images; // U8 [N, height, width, channels]: decoded (stb_image), resized
                    // (stb_image_resize: a box filter where an axis shrinks, a triangle
                    // one where it grows), RGB (3) or grey (1); an image that does not
                    // decode fails when produced
  ArrayPlan labels; // I32 [N]
};
ImageFolderPlan openImageFolder(const std::string &folder, int64_t height, int64_t width,
                                int64_t channels);

} // namespace shardrt::data

#endif // SHARDRT_LIB_DATA_ARRAY_FILE_H
