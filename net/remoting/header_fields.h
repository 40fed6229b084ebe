#pragma once
// Numeric request-header fields read as RocketMQ's Java broker reads them
// (RemotingCommand.decodeCommandCustomHeader: Integer.parseInt for an int field, Long.parseLong
// for a long one): an optional sign, then one or more ASCII decimal digits, within the type's
// range. No whitespace, exponent, fraction, hex, or trailing text. A field that is present but
// does not parse is refused with a remark naming it (`queueId: "abc" is not an int`) and code 1
// SYSTEM_ERROR, the answer Java's remoting layer gives when decoding a header throws.
// Pure functions and a small value type; thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "net/remoting/remoting.h"

namespace uringmq::net {

// Java's Integer.parseInt / Long.parseLong over ASCII digits: nullopt for anything else.
std::optional<int32_t> parse_java_int(std::string_view text);
std::optional<int64_t> parse_java_long(std::string_view text);

// Reads numeric ext fields of one request and keeps the first malformed one's remark.
// An absent field is nullopt and no error; a present one that does not parse is nullopt and
// sets error() (later fields do not replace it).
class HeaderFields {
 public:
  explicit HeaderFields(const RemotingCommand& command) : command_(command) {}
  // `key` is the field's name on the wire; `name` the one the remark uses (SEND_MESSAGE_V2
  // abbreviates names to letters: "e" is queueId). Empty name: the key.
  std::optional<int32_t> int32(std::string_view key, std::string_view name = {});
  std::optional<int64_t> int64(std::string_view key, std::string_view name = {});
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  // The field as a T (int32_t or int64_t; `type` names it in the remark).
  template <typename T>
  std::optional<T> integer(std::string_view key, std::string_view name, const char* type);
  void note(std::string_view name, const std::string& text, const char* type);
  const RemotingCommand& command_;
  std::string error_;
};

}  // namespace uringmq::net
