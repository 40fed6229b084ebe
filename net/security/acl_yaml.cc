#include "net/security/acl_yaml.h"

#include <algorithm>

namespace uringmq::net {

YamlNode::YamlNode() = default;
YamlNode::~YamlNode() = default;
YamlNode::YamlNode(const YamlNode&) = default;
YamlNode::YamlNode(YamlNode&&) noexcept = default;
YamlNode& YamlNode::operator=(const YamlNode&) = default;
YamlNode& YamlNode::operator=(YamlNode&&) noexcept = default;

const YamlNode* YamlNode::find(std::string_view key) const {
  if (kind != Kind::map) return nullptr;
  for (const auto& [name, value] : members) {
    if (name == key) return &value;
  }
  return nullptr;
}

namespace {

struct Line {
  size_t number = 0;
  size_t indent = 0;
  std::string_view content;  // without indentation, comment and trailing blanks
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// The line without its comment: a '#' at its start or after a blank, outside quotes.
std::string_view strip_comment(std::string_view s) {
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    if (quote != 0) {
      if (ch == '\\' && quote == '"') {
        ++i;
      } else if (ch == quote) {
        quote = 0;
      }
    } else if (ch == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) {
      return s.substr(0, i);
    } else if ((ch == '"' || ch == '\'') && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '-' ||
                                             s[i - 1] == '[' || s[i - 1] == ',')) {
      quote = ch;
    }
  }
  return s;
}

bool is_list_item(std::string_view content) {
  return !content.empty() && content[0] == '-' && (content.size() == 1 || content[1] == ' ');
}

// Where a map entry's key ends (the ':' followed by a blank or the end), npos when `content` is
// not a `key: value` entry. A quoted key ends at its closing quote.
size_t key_end(std::string_view content) {
  size_t from = 0;
  if (!content.empty() && (content[0] == '"' || content[0] == '\'')) {
    const size_t close = content.find(content[0], 1);
    if (close == std::string_view::npos) return std::string_view::npos;
    from = close + 1;
  }
  for (size_t i = from; i < content.size(); ++i) {
    if (content[i] == ':' && (i + 1 == content.size() || content[i + 1] == ' ')) return i;
  }
  return std::string_view::npos;
}

class YamlParser {
 public:
  YamlParser(std::vector<Line> lines, std::string_view source)
      : lines_(std::move(lines)), source_(source) {}

  io::Status parse(YamlNode* out) {
    if (lines_.empty()) return {};
    UMQ_RETURN_IF_ERROR(parse_block(lines_[0].indent, 0, out));
    if (pos_ < lines_.size()) return error(lines_[pos_].number, "unexpected indentation");
    return {};
  }

 private:
  io::Status error(size_t line, const std::string& what) const {
    return io::Status::error(io::Code::invalid_argument,
                             std::string(source_) + ":" + std::to_string(line) + ": " + what);
  }

  io::Status count(size_t line, size_t depth) {
    if (++nodes_ > kAclYamlMaxNodes) {
      return error(line, "more than " + std::to_string(kAclYamlMaxNodes) + " values");
    }
    if (depth > kAclYamlMaxDepth) {
      return error(line, "nested deeper than " + std::to_string(kAclYamlMaxDepth) + " levels");
    }
    return {};
  }

  io::Status parse_block(size_t indent, size_t depth, YamlNode* out) {
    UMQ_RETURN_IF_ERROR(count(lines_[pos_].number, depth));
    out->line = lines_[pos_].number;
    if (is_list_item(lines_[pos_].content)) return parse_list(indent, depth, out);
    return parse_map(indent, depth, out);
  }

  // The value after `key:` or `-` with nothing on its line: a deeper block, a list at the same
  // indentation (maps only: `key:` then `- item`), or null.
  io::Status parse_nested(size_t indent, size_t depth, bool allow_same_list, YamlNode* out) {
    if (pos_ < lines_.size() && lines_[pos_].indent > indent) {
      return parse_block(lines_[pos_].indent, depth + 1, out);
    }
    if (allow_same_list && pos_ < lines_.size() && lines_[pos_].indent == indent &&
        is_list_item(lines_[pos_].content)) {
      UMQ_RETURN_IF_ERROR(count(lines_[pos_].number, depth + 1));
      out->line = lines_[pos_].number;
      return parse_list(indent, depth + 1, out);
    }
    out->kind = YamlNode::Kind::null;
    return {};
  }

  io::Status no_deeper(size_t indent) const {
    if (pos_ < lines_.size() && lines_[pos_].indent > indent) {
      return error(lines_[pos_].number, "unexpected indentation");
    }
    return {};
  }

  io::Status parse_map(size_t indent, size_t depth, YamlNode* out) {
    out->kind = YamlNode::Kind::map;
    while (pos_ < lines_.size() && lines_[pos_].indent == indent) {
      const Line line = lines_[pos_];
      if (is_list_item(line.content)) {
        return error(line.number, "a list item where a 'key: value' line was expected");
      }
      const size_t colon = key_end(line.content);
      if (colon == std::string_view::npos) {
        return error(line.number, "expected 'key: value' or 'key:'");
      }
      YamlNode key;
      UMQ_RETURN_IF_ERROR(parse_scalar(trim(line.content.substr(0, colon)), line.number, &key));
      if (key.kind != YamlNode::Kind::scalar || key.text.empty()) {
        return error(line.number, "a map key is empty");
      }
      if (out->find(key.text) != nullptr) {
        return error(line.number, "key '" + key.text + "' appears twice in the same map");
      }
      const std::string_view rest = trim(line.content.substr(colon + 1));
      ++pos_;
      YamlNode value;
      value.line = line.number;
      if (rest.empty()) {
        UMQ_RETURN_IF_ERROR(parse_nested(indent, depth, /*allow_same_list=*/true, &value));
      } else {
        UMQ_RETURN_IF_ERROR(count(line.number, depth + 1));
        UMQ_RETURN_IF_ERROR(parse_scalar(rest, line.number, &value));
        UMQ_RETURN_IF_ERROR(no_deeper(indent));
      }
      out->members.emplace_back(std::move(key.text), std::move(value));
    }
    return {};
  }

  io::Status parse_list(size_t indent, size_t depth, YamlNode* out) {
    out->kind = YamlNode::Kind::list;
    while (pos_ < lines_.size() && lines_[pos_].indent == indent &&
           is_list_item(lines_[pos_].content)) {
      Line& line = lines_[pos_];
      std::string_view rest = line.content.substr(1);
      const size_t blanks = rest.size() - trim(rest).size();  // trim drops leading blanks only
      rest = trim(rest);
      YamlNode item;
      item.line = line.number;
      if (rest.empty()) {
        ++pos_;
        UMQ_RETURN_IF_ERROR(parse_nested(indent, depth, /*allow_same_list=*/false, &item));
      } else if (key_end(rest) != std::string_view::npos) {
        // `- key: value` starts a map whose keys line up with `key`.
        line.indent += 1 + blanks;
        line.content = rest;
        UMQ_RETURN_IF_ERROR(parse_block(line.indent, depth + 1, &item));
      } else {
        ++pos_;
        UMQ_RETURN_IF_ERROR(count(line.number, depth + 1));
        UMQ_RETURN_IF_ERROR(parse_scalar(rest, line.number, &item));
        UMQ_RETURN_IF_ERROR(no_deeper(indent));
      }
      out->items.push_back(std::move(item));
    }
    return {};
  }

  io::Status parse_quoted(std::string_view s, size_t line, YamlNode* out) const {
    const char quote = s[0];
    std::string text;
    size_t i = 1;
    for (; i < s.size(); ++i) {
      const char ch = s[i];
      if (quote == '\'' && ch == '\'') {
        if (i + 1 < s.size() && s[i + 1] == '\'') {
          text.push_back('\'');
          ++i;
          continue;
        }
        break;
      }
      if (quote == '"' && ch == '"') break;
      if (quote == '"' && ch == '\\') {
        if (++i == s.size()) break;
        const char e = s[i];
        const char* from = "\\\"/ntr0";
        const char* to = "\\\"/\n\t\r";
        const char* at = std::char_traits<char>::find(from, 7, e);
        if (at == nullptr) {
          return error(line, std::string("unsupported escape \\") + e + " in a quoted value");
        }
        text.push_back(at - from == 6 ? '\0' : to[at - from]);
        continue;
      }
      text.push_back(ch);
    }
    if (i >= s.size()) return error(line, "a quoted value has no closing quote");
    if (!trim(s.substr(i + 1)).empty()) {
      return error(line, "text after the closing quote: '" + std::string(s.substr(i + 1)) + "'");
    }
    out->kind = YamlNode::Kind::scalar;
    out->quoted = true;
    out->text = std::move(text);
    return {};
  }

  io::Status parse_flow_list(std::string_view s, size_t line, YamlNode* out) {
    if (s.back() != ']') return error(line, "a flow list '[...]' must end its line with ']'");
    out->kind = YamlNode::Kind::list;
    std::string_view inner = trim(s.substr(1, s.size() - 2));
    while (!inner.empty()) {
      size_t comma = 0;
      char quote = 0;
      for (; comma < inner.size(); ++comma) {
        const char ch = inner[comma];
        if (quote != 0) {
          if (ch == quote) quote = 0;
        } else if (ch == '"' || ch == '\'') {
          quote = ch;
        } else if (ch == ',') {
          break;
        }
      }
      const std::string_view part = trim(inner.substr(0, comma));
      if (part.empty()) return error(line, "an empty item in a flow list");
      if (part[0] == '[') return error(line, "nested flow lists are not supported");
      YamlNode item;
      item.line = line;
      UMQ_RETURN_IF_ERROR(count(line, 1));
      UMQ_RETURN_IF_ERROR(parse_scalar(part, line, &item));
      out->items.push_back(std::move(item));
      inner = comma < inner.size() ? trim(inner.substr(comma + 1)) : std::string_view();
    }
    return {};
  }

  io::Status parse_scalar(std::string_view s, size_t line, YamlNode* out) {
    out->line = line;
    if (s[0] == '"' || s[0] == '\'') return parse_quoted(s, line, out);
    if (s[0] == '[') return parse_flow_list(s, line, out);
    if (std::string_view("{&*!|>").find(s[0]) != std::string_view::npos) {
      return error(line, std::string("'") + s[0] +
                             "' starts a YAML form plain_acl.yml does not use (flow maps, "
                             "anchors, aliases, tags, block scalars): quote the value");
    }
    if (s == "~" || s == "null" || s == "Null" || s == "NULL") {
      out->kind = YamlNode::Kind::null;
      return {};
    }
    out->kind = YamlNode::Kind::scalar;
    out->text = std::string(s);
    return {};
  }

  std::vector<Line> lines_;
  std::string_view source_;
  size_t pos_ = 0;
  size_t nodes_ = 0;
};

}  // namespace

io::Result<YamlNode> parse_yaml(std::string_view text, std::string_view source) {
  if (text.size() > kAclYamlMaxBytes) {
    return io::Status::error(io::Code::too_large, std::string(source) + " is larger than " +
                                                      std::to_string(kAclYamlMaxBytes) + " bytes");
  }
  std::vector<Line> lines;
  size_t number = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view raw = text.substr(start, end - start);
    start = end + 1;
    ++number;
    size_t indent = 0;
    while (indent < raw.size() && raw[indent] == ' ') ++indent;
    const std::string_view content = trim(strip_comment(raw.substr(indent)));
    if (content.empty()) continue;
    if (raw[indent] == '\t') {
      return io::Status::error(io::Code::invalid_argument,
                               std::string(source) + ":" + std::to_string(number) +
                                   ": a tab in the indentation (YAML indents with spaces)");
    }
    if (lines.empty() && content == "---") continue;
    lines.push_back(Line{number, indent, content});
  }
  YamlNode root;
  YamlParser parser(std::move(lines), source);
  UMQ_RETURN_IF_ERROR(parser.parse(&root));
  return root;
}

}  // namespace uringmq::net
