// The JSON the driver writes (results, metrics lines, summaries, the gradient check),
// built as text so that each number is printed with the digits chosen for it.
#ifndef SHARDRT_LIB_DRIVER_JSON_H
#define SHARDRT_LIB_DRIVER_JSON_H

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <string>

namespace shardrt {

/// A number; %.9g round-trips an f32. JSON has no NaN or infinities: they are written
/// as the strings Python's float() reads.
inline std::string jsonNumber(double value, const char *format = "%.9g") {
  if (std::isnan(value))
    return "\"NaN\"";
  if (std::isinf(value))
    return value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  char text[40];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

inline std::string jsonString(const std::string &text) { return nlohmann::json(text).dump(); }

/// An object built member by member; values are JSON text already. Spaced (", ", ": ")
/// for people, compact for JSON lines.
class JsonObject {
public:
  enum Style { Spaced, Compact };
  explicit JsonObject(Style style = Spaced) : spaced_(style == Spaced) {}
  JsonObject &add(const std::string &key, const std::string &value) {
    if (!text_.empty())
      text_ += spaced_ ? ", " : ",";
    text_ += jsonString(key) + (spaced_ ? ": " : ":") + value;
    return *this;
  }
  std::string str() const { return "{" + text_ + "}"; }

private:
  bool spaced_;
  std::string text_;
};

} // namespace shardrt

#endif // SHARDRT_LIB_DRIVER_JSON_H
