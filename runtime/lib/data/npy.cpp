// NumPy's .npy format (numpy.lib.format, "NPY format"):
//
//   6 bytes    the magic "\x93NUMPY"
//   2 bytes    the version, major then minor: 1.0, 2.0 or 3.0
//   2 or 4     the header's length, little-endian: 2 bytes in 1.0, 4 in 2.0 and 3.0
//   N bytes    the header: a Python literal dict, e.g.
//              {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
//              padded with spaces and a newline (3.0 allows UTF-8 in it)
//   the rest   the elements, raw
//
// numpy.load reads the dict with ast.literal_eval. Here a small strict parser reads the
// subset NumPy writes: exactly those three keys, quoted strings, True/False and tuples
// of integers; anything else is an error that quotes the header.
#include "reading.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

namespace shardrt::data {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr uint64_t kMagicBytes = 6;
/// NumPy itself refuses headers over 10000 bytes by default (max_header_size); this
/// bound only keeps a lying length from allocating gigabytes.
constexpr uint64_t kMaxHeaderBytes = 1 << 20;

struct Descr {
  const char *text;
  ElementType type;
};
constexpr Descr kDescrs[] = {
    {"|u1", ElementType::U8},  {"<u2", ElementType::U16}, {"<u4", ElementType::U32},
    {"<i4", ElementType::I32}, {"<i8", ElementType::I64}, {"<f4", ElementType::F32},
    {"<f8", ElementType::F64},
};

std::string acceptedDescrs() {
  std::string list;
  for (const Descr &descr : kDescrs)
    list += (list.empty() ? "'" : ", '") + std::string(descr.text) + "'";
  return list;
}

/// Header text as messages quote it: bytes other than printable ASCII as \xNN (a damaged
/// file's header may hold anything).
std::string printable(const std::string &text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\x%02x", c);
      out += escape;
    }
  }
  return out;
}

/// The whole header as messages quote it: without its padding, and not too long.
std::string quoteHeader(const std::string &text) {
  const std::string header = text.substr(0, text.find_last_not_of(" \n") + 1);
  return printable(header.size() > 200 ? header.substr(0, 200) + "..." : header);
}

/// The header's dict, read left to right; `fail` quotes the header and says where.
class DictParser {
public:
  DictParser(const std::string &what, const std::string &text) : what_(what), text_(text) {}

  [[noreturn]] void fail(const std::string &problem) const {
    data::fail(what_, "malformed .npy header: " + problem + " at character " +
                          std::to_string(pos_ + 1) + " of " + quoteHeader(text_));
  }

  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\t' || text_[pos_] == '\r'))
      ++pos_;
  }

  /// Skips spaces, then takes `c` if it comes next.
  bool take(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!take(c))
      fail(std::string("expected '") + c + "'");
  }

  bool peek(char c) {
    skipSpace();
    return pos_ < text_.size() && text_[pos_] == c;
  }

  std::string string() {
    skipSpace();
    const char quote = pos_ < text_.size() ? text_[pos_] : '\0';
    if (quote != '\'' && quote != '"')
      fail("expected a quoted string");
    const size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string::npos)
      fail("unterminated string");
    std::string value = text_.substr(pos_ + 1, end - pos_ - 1);
    // NumPy's dtype strings never need escapes; a backslash means something else.
    if (value.find('\\') != std::string::npos)
      fail("a string with a backslash escape");
    pos_ = end + 1;
    return value;
  }

  bool boolean() {
    skipSpace();
    for (const char *word : {"True", "False"})
      if (text_.compare(pos_, std::strlen(word), word) == 0) {
        pos_ += std::strlen(word);
        return word[0] == 'T';
      }
    fail("expected True or False");
  }

  /// A tuple of non-negative integers; (3,) has one, (3) is no tuple in Python.
  std::vector<int64_t> shape() {
    expect('(');
    std::vector<int64_t> sizes;
    bool comma = false;
    while (!take(')')) {
      if (!sizes.empty() && !comma)
        fail("expected ',' or ')'");
      sizes.push_back(size());
      comma = take(',');
    }
    if (sizes.size() == 1 && !comma)
      fail("a shape of one dimension is written (N,)");
    return sizes;
  }

  void end() {
    skipSpace();
    if (pos_ != text_.size())
      fail("text after the dict");
  }

private:
  int64_t size() {
    skipSpace();
    if (pos_ >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_])))
      fail("expected a size (a non-negative integer)");
    int64_t value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      if (__builtin_mul_overflow(value, int64_t(10), &value) ||
          __builtin_add_overflow(value, int64_t(text_[pos_] - '0'), &value))
        fail("a size beyond 63 bits");
      ++pos_;
    }
    // Python 2's NumPy wrote long integers as 3L.
    if (pos_ < text_.size() && text_[pos_] == 'L')
      ++pos_;
    return value;
  }

  const std::string &what_;
  const std::string &text_;
  size_t pos_ = 0;
};

/// The element type of `descr`, or a failure that says why it is refused.
ElementType readDescr(const std::string &what, const std::string &text) {
  for (const Descr &known : kDescrs)
    if (text == known.text)
      return known.type;
  const std::string descr = printable(text);
  if (descr.size() >= 2 && descr[1] == 'O')
    fail(what, "dtype '" + descr + "' is an object array (Python objects, not numbers)");
  if (!descr.empty() && descr[0] == '>')
    fail(what, "dtype '" + descr + "' is big-endian; save it little-endian (a.astype('<" +
                   descr.substr(1) + "'))");
  fail(what, "dtype '" + descr + "' is not supported; accepted: " + acceptedDescrs());
}

/// The header's dict: descr, fortran_order and shape, each once, in any order.
void readDict(ArrayPlan &plan, const std::string &text) {
  const char *const keys[] = {"descr", "fortran_order", "shape"};
  bool seen[3] = {false, false, false};
  DictParser parser(plan.what, text);
  parser.expect('{');
  while (!parser.take('}')) {
    const std::string key = parser.string();
    const int index = int(std::find(std::begin(keys), std::end(keys), key) - std::begin(keys));
    if (index == 3)
      parser.fail("unknown key '" + printable(key) + "'");
    if (seen[index])
      parser.fail("a second '" + key + "'");
    seen[index] = true;
    parser.expect(':');
    if (index == 0) {
      if (parser.peek('['))
        fail(plan.what, "a structured dtype (descr is a list of fields) is not supported; "
                        "accepted: " +
                            acceptedDescrs());
      plan.type = readDescr(plan.what, parser.string());
    } else if (index == 1) {
      if (parser.boolean())
        fail(plan.what, "fortran_order is True: its elements are stored column-major; save "
                        "it in C order (numpy.ascontiguousarray)");
    } else {
      plan.shape = parser.shape();
    }
    if (!parser.take(',') && !parser.peek('}'))
      parser.fail("expected ',' or '}'");
  }
  parser.end();
  for (int i = 0; i < 3; ++i)
    if (!seen[i])
      fail(plan.what,
           std::string("malformed .npy header: no '") + keys[i] + "' in " + quoteHeader(text));
}

} // namespace

uint64_t readNpyHeader(ArrayPlan &plan, const ReadNext &read) {
  unsigned char prelude[12];
  const uint64_t got = read(prelude, 8);
  if (std::memcmp(prelude, kMagic, std::min(got, kMagicBytes)) != 0 || got == 0)
    fail(plan.what, "not a .npy file: it does not start with \\x93NUMPY");
  if (got < 8)
    fail(plan.what, "truncated: it ends inside its .npy header");
  const int major = prelude[6], minor = prelude[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    fail(plan.what, ".npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                        " is not supported (1.0, 2.0 and 3.0 are)");
  const uint64_t lengthBytes = major == 1 ? 2 : 4;
  if (read(prelude + 8, lengthBytes) < lengthBytes)
    fail(plan.what, "truncated: it ends inside its .npy header");
  uint64_t length = 0;
  for (uint64_t i = 0; i < lengthBytes; ++i)
    length |= uint64_t(prelude[8 + i]) << (8 * i);
  if (length > kMaxHeaderBytes)
    fail(plan.what, ".npy header length " + std::to_string(length) + " is more than the " +
                        std::to_string(kMaxHeaderBytes) + " bytes a header may have");
  std::string text(length, '\0');
  if (read(text.data(), length) < length)
    fail(plan.what,
         "truncated: it ends inside its .npy header of " + std::to_string(length) + " bytes");
  readDict(plan, text);
  checkShape(plan);
  return 8 + lengthBytes + length;
}

ArrayPlan openNpy(const std::string &path) {
  ArrayPlan plan;
  plan.what = quoted(path);
  plan.path = path;
  const InputFile file(path);
  uint64_t position = 0;
  plan.offset = readNpyHeader(plan, [&](void *out, uint64_t count) {
    const uint64_t got = file.readAt(position, out, count);
    position += got;
    return got;
  });
  checkHeld(plan, file.size() - plan.offset);
  return plan;
}

} // namespace shardrt::data
