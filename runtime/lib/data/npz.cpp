// One member of a NumPy .npz archive: a zip file (Python's zipfile) whose members are
// .npy files named NAME.npy, stored by numpy.savez and deflated by savez_compressed.
// libzip reads the archive and inflates and checks (CRC-32) the member.
//
// The member's type and shape are needed when it is opened, its elements only once the
// caller has a buffer for them: opening reads the start of the member, its .npy header,
// and checks it against the member's size in the archive's directory; the plan's
// produce opens the archive anew and reads the member through.
#include "reading.h"

#include <zip.h>

#include <algorithm>

namespace shardrt::data {
namespace {

constexpr char kSuffix[] = ".npy";
constexpr size_t kSuffixBytes = sizeof kSuffix - 1;

/// A zip archive open for reading, discarded (never written back) when it goes out of
/// scope.
class Archive {
public:
  explicit Archive(const std::string &path) {
    // InputFile first, for the messages every format gives a missing file or a folder.
    const InputFile file(path);
    size_ = file.size();
    int code = 0;
    zip_ = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
    if (!zip_) {
      zip_error_t error;
      zip_error_init_with_code(&error, code);
      const std::string text = zip_error_strerror(&error);
      zip_error_fini(&error);
      fail(quoted(path), code == ZIP_ER_NOZIP ? "not a .npz file (not a zip archive)"
                                              : "not a valid zip archive: " + text);
    }
  }
  ~Archive() { zip_discard(zip_); }
  Archive(const Archive &) = delete;
  Archive &operator=(const Archive &) = delete;

  zip_t *get() const { return zip_; }
  uint64_t size() const { return size_; }

private:
  zip_t *zip_ = nullptr;
  uint64_t size_ = 0;
};

/// One member being read, closed when it goes out of scope.
class Member {
public:
  Member(const Archive &archive, zip_uint64_t index, const std::string &what) : what_(what) {
    file_ = zip_fopen_index(archive.get(), index, 0);
    if (!file_)
      fail(what_, std::string("cannot read it: ") + zip_strerror(archive.get()));
  }
  ~Member() { zip_fclose(file_); }
  Member(const Member &) = delete;
  Member &operator=(const Member &) = delete;

  /// Up to `count` bytes; fewer only at the member's end. A corrupt deflate stream, or a
  /// CRC-32 that does not match once the end is reached, fails.
  uint64_t read(void *out, uint64_t count) {
    uint8_t *bytes = static_cast<uint8_t *>(out);
    uint64_t done = 0;
    while (done < count) {
      const zip_int64_t got =
          zip_fread(file_, bytes + done, std::min<uint64_t>(count - done, 1 << 30));
      if (got < 0)
        fail(what_, std::string("corrupt data: ") + zip_file_strerror(file_));
      if (got == 0)
        break;
      done += uint64_t(got);
    }
    return done;
  }

  ReadNext reader() {
    return [this](void *out, uint64_t count) { return read(out, count); };
  }

private:
  std::string what_;
  zip_file_t *file_ = nullptr;
};

/// The index of `member`'s entry, NAME.npy as numpy.savez names it or NAME as given, or
/// `fail` listing the members there are. Sets `name` to the entry's name.
zip_uint64_t findMember(const Archive &archive, const std::string &path, const std::string &member,
                        std::string &name) {
  for (const std::string &candidate : {member + kSuffix, member}) {
    const zip_int64_t index = zip_name_locate(archive.get(), candidate.c_str(), 0);
    if (index >= 0) {
      name = candidate;
      return zip_uint64_t(index);
    }
  }
  std::string members;
  const zip_int64_t count = zip_get_num_entries(archive.get(), 0);
  for (zip_int64_t i = 0; i < count; ++i) {
    const char *stored = zip_get_name(archive.get(), zip_uint64_t(i), 0);
    if (!stored)
      continue;
    std::string entry = stored;
    if (entry.size() > kSuffixBytes &&
        entry.compare(entry.size() - kSuffixBytes, kSuffixBytes, kSuffix) == 0)
      entry.resize(entry.size() - kSuffixBytes);
    members += (members.empty() ? "'" : ", '") + entry + "'";
  }
  fail(quoted(path),
       "no member '" + member + "'; it holds " + (members.empty() ? std::string("none") : members));
}

} // namespace

ArrayPlan openNpz(const std::string &path, const std::string &member) {
  ArrayPlan plan;
  plan.what = quoted(path) + " member '" + member + "'";
  const Archive archive(path);
  std::string name;
  const zip_uint64_t index = findMember(archive, path, member, name);

  zip_stat_t stat;
  zip_stat_init(&stat);
  if (zip_stat_index(archive.get(), index, 0, &stat) != 0)
    fail(plan.what, std::string("cannot read its entry: ") + zip_strerror(archive.get()));
  if (stat.comp_method != ZIP_CM_STORE && stat.comp_method != ZIP_CM_DEFLATE)
    fail(plan.what, "compressed with zip method " + std::to_string(stat.comp_method) +
                        "; only stored and deflated members are read");
  // Checked here because the caller allocates what the header announces: sizes in the
  // archive's directory that its bytes cannot hold are as much a lie as a shape.
  const uint64_t most = std::min(stat.comp_size, archive.size()) *
                        (stat.comp_method == ZIP_CM_STORE ? 1 : kMaxDeflateRatio);
  if (stat.size > most)
    fail(plan.what, "not a valid zip member: its size, " + std::to_string(stat.size) +
                        " bytes, is more than its " + std::to_string(stat.comp_size) +
                        " bytes in the archive can hold");

  Member stream(archive, index, plan.what);
  const uint64_t headerBytes = readNpyHeader(plan, stream.reader());
  checkHeld(plan, stat.size - std::min(stat.size, headerBytes));

  plan.produce = [path, name, expected = plan](uint8_t *out) {
    const Archive archive(path);
    const zip_int64_t index = zip_name_locate(archive.get(), name.c_str(), 0);
    if (index < 0)
      fail(expected.what, "changed since it was opened: the member is gone");
    Member stream(archive, zip_uint64_t(index), expected.what);
    ArrayPlan again;
    again.what = expected.what;
    readNpyHeader(again, stream.reader());
    checkUnchanged(expected, again);
    readElements(expected, stream.reader(), out);
  };
  return plan;
}

} // namespace shardrt::data
