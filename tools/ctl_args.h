#pragma once
// uringmq-ctl command-line arguments: `--name value` options (repeatable), `--flag` switches and
// positional words, checked against what each subcommand accepts. Header-only; one thread.

#include <charconv>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace uringmq::ctl {

// Exit codes of uringmq-ctl.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

class CtlArgs {
 public:
  // Parses argv[first..argc). `valued`: options that take a value; `flags`: switches. An
  // unknown option, or a valued one at the end, sets error().
  CtlArgs(int argc, char** argv, int first, const std::set<std::string_view>& valued,
          const std::set<std::string_view>& flags) {
    for (int i = first; i < argc; i++) {
      std::string_view word = argv[i];
      if (word.size() > 2 && word.substr(0, 2) == "--") {
        std::string_view name = word.substr(2);
        if (flags.count(name) != 0) {
          options_.emplace_back(std::string(name), "");
        } else if (valued.count(name) != 0) {
          if (i + 1 >= argc) {
            error_ = "option --" + std::string(name) + " needs a value";
            return;
          }
          options_.emplace_back(std::string(name), argv[++i]);
        } else {
          error_ = "unknown option " + std::string(word);
          return;
        }
      } else {
        positional_.emplace_back(word);
      }
    }
  }
  const std::string& error() const { return error_; }
  const std::vector<std::string>& positional() const { return positional_; }
  bool has(std::string_view name) const { return get(name) != nullptr; }
  // The last value given for `name`, or null.
  const std::string* get(std::string_view name) const {
    const std::string* found = nullptr;
    for (const auto& [n, v] : options_) {
      if (n == name) found = &v;
    }
    return found;
  }
  std::string get_or(std::string_view name, std::string fallback) const {
    const std::string* v = get(name);
    return v != nullptr ? *v : std::move(fallback);
  }
  std::vector<std::string> all(std::string_view name) const {
    std::vector<std::string> out;
    for (const auto& [n, v] : options_) {
      if (n == name) out.push_back(v);
    }
    return out;
  }

 private:
  std::vector<std::pair<std::string, std::string>> options_;
  std::vector<std::string> positional_;
  std::string error_;
};

// A whole decimal integer in [min, max], or nullopt.
inline std::optional<int64_t> parse_int(std::string_view text, int64_t min, int64_t max) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value < min || value > max) return std::nullopt;
  return value;
}

}  // namespace uringmq::ctl
