#!/usr/bin/env python3
"""Reports C++ functions whose body is longer than a limit (default 100 lines).

Usage: tools/lint_function_size.py [--max N] FILE...
Prints "path:line: function NAME has N lines (limit M)" for each one and exits 1 if any.

The length of a function is the number of lines strictly between the line of its opening
brace and the line of its closing brace. A lambda or a local class counts toward the function
that contains it. This is a brace matcher, not a parser (clang-tidy's readability-function-size
gives the same answer but takes minutes over this tree on two cores). It first blanks out
comments, string and character literals (raw strings included) and preprocessor lines, then
walks the braces: at namespace or class scope, a brace that follows a parameter list (with
optional qualifiers, a trailing return type or a constructor's initialiser list) opens a
function body; a brace after class/struct/union/enum or namespace opens a scope; any other
brace (an initialiser) is skipped as a whole.
"""
import re
import sys

IDENT = re.compile(r"[A-Za-z0-9_]")
RAW_PREFIX = re.compile(r"(?:^|[^A-Za-z0-9_])(?:u8|u|U|L)?R$")


def blank(text):
    """Returns text with comments, literals and preprocessor lines replaced by spaces."""
    out = list(text)
    i, n = 0, len(text)

    def wipe(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    at_line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            at_line_start = True
            i += 1
            continue
        if at_line_start and c in " \t":
            i += 1
            continue
        if at_line_start and c == "#":  # a directive, with its continuation lines
            j = i
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                j += 1
            wipe(i, j)
            i = j
            continue
        at_line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            wipe(i, j)
            i = j
        elif c == '"' and RAW_PREFIX.search(text[max(0, i - 4):i]):
            open_paren = text.find("(", i)
            delim = text[i + 1:open_paren]
            end = text.find(")" + delim + '"', open_paren)
            j = n if end < 0 else end + len(delim) + 2
            wipe(i, j)
            i = j
        elif c == '"' or (c == "'" and not is_digit_separator(text, i)):
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            wipe(i, j + 1)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def is_digit_separator(text, i):
    """True if the quote at i is a C++14 digit separator (1'000'000), not a char literal."""
    j = i
    while j > 0 and (IDENT.match(text[j - 1]) or text[j - 1] == "."):
        j -= 1
    return j < i and text[j].isdigit()


SCOPE_KEYWORD = re.compile(r"^(?:typedef\s+)?(?:class|struct|union|enum)\b")
NAMESPACE = re.compile(r"(?:^|\s)(?:inline\s+)?namespace\b|^extern\s*$")
QUALIFIERS = r"(?:\s*(?:const|volatile|noexcept|override|final|mutable|try|&&|&))*"
AFTER_PARAMS = re.compile(r"\)" + QUALIFIERS + r"\s*$")
TRAILING_RETURN = re.compile(r"\)" + QUALIFIERS + r"\s*->[^;]*$")


def strip_template(header):
    """Drops leading template<...> prefixes."""
    while header.startswith("template"):
        depth, k = 0, len("template")
        while k < len(header):
            if header[k] == "<":
                depth += 1
            elif header[k] == ">":
                depth -= 1
                if depth == 0:
                    k += 1
                    break
            k += 1
        header = header[k:].lstrip()
    return header


def ctor_init_colon(header):
    """True if the header has a top-level ':' after its parameter list (an initialiser list)."""
    depth, seen_params = 0, False
    k = 0
    while k < len(header):
        ch = header[k]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                seen_params = True
        elif ch == ":" and depth == 0 and seen_params:
            if header.startswith("::", k):
                k += 2
                continue
            return True
        k += 1
    return False


def classify(header):
    """'scope', 'function' or 'init' for a brace at namespace/class scope after header."""
    h = strip_template(" ".join(header.split()))
    h = re.sub(r"^(?:public|private|protected)\s*:\s*", "", h)
    if NAMESPACE.search(h) or h == "":
        return "scope"
    if SCOPE_KEYWORD.match(h) and "(" not in h.split("{")[0].split(":")[0]:
        return "scope"
    if "(" not in h:
        return "init"
    if AFTER_PARAMS.search(h) or TRAILING_RETURN.search(h):
        return "function" if not re.search(r"=\s*\[", h) else "init"
    if ctor_init_colon(h) and h.endswith("}"):
        return "function"
    return "init"


def function_name(header):
    h = strip_template(" ".join(header.split()))
    m = re.search(r"(operator\s*(?:\(\)|[^\s(]+)|~?[A-Za-z_][\w:~]*)\s*\(", h)
    return m.group(1) if m else "?"


def matching_brace(code, i):
    depth = 0
    for k in range(i, len(code)):
        if code[k] == "{":
            depth += 1
        elif code[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(code) - 1


def long_functions(path, limit):
    with open(path, encoding="utf-8", errors="replace") as f:
        code = blank(f.read())
    found = []
    line_of = [0] * (len(code) + 1)
    line = 1
    for k, ch in enumerate(code):
        line_of[k] = line
        if ch == "\n":
            line += 1
    line_of[len(code)] = line

    header_start = 0
    i = 0
    while i < len(code):
        ch = code[i]
        if ch in ";}":
            header_start = i + 1
        elif ch == "{":
            header = code[header_start:i]
            kind = classify(header)
            if kind == "scope":
                header_start = i + 1
            elif kind == "function":
                end = matching_brace(code, i)
                lines = line_of[end] - line_of[i] - 1
                if lines > limit:
                    found.append((line_of[i], function_name(header), lines))
                i = end
                header_start = end + 1
            else:  # an initialiser: part of the declaration, which goes on until ';'
                i = matching_brace(code, i)
        i += 1
    return found


def main(argv):
    limit = 100
    if len(argv) >= 2 and argv[0] == "--max":
        limit = int(argv[1])
        argv = argv[2:]
    bad = 0
    for path in argv:
        for line, name, lines in long_functions(path, limit):
            print(f"{path}:{line}: function {name} has {lines} lines (limit {limit})")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
