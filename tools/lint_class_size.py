#!/usr/bin/env python3
"""Reports C++ classes and structs with more than 40 methods or more than 30 fields.

Usage: tools/lint_class_size.py [--max-methods N] [--max-fields N] [--allow FILE] FILE...
Prints "path:line: class NAME has N methods (max M)" and "... N fields (max M)" for each one
and exits 1 if any. A class named in the allow file ("path NAME" a line, '#' comments) is
printed as "allowed (to split): path:line: class NAME has ..." instead and does not fail; an
allow file entry that matches no offender is reported, so the list cannot go stale.

Counted per class, struct or union definition at namespace or class scope (a local class in a
function body is not counted); a nested class counts on its own, and its members not for the
class around it. Methods are the member functions declared or defined in the body:
constructors, the destructor, operators and static and template member functions count, a
declaration ending "= default" or "= delete" does not (the compiler writes it, or it does not
exist), nor does a friend. Fields are the non-static data members, one per declarator
("int a, b;" is 2, a bit-field is one); static members (constants too) do not count. A
member of an anonymous union counts as one field of its class (clang's AST has one FieldDecl).

Like tools/lint_function_size.py, whose comment and literal blanking it reuses, this is a
scanner, not a parser: it splits a class body into member declarations at ';' and at the
closing brace of a member function's body, and tells a function declaration by its parameter
list (a '(' at the top level, before any '=', after a name). A member that is a lone name is
an object-like macro: its body, if one of the files defines it, is counted in its place
(URINGMQ_DISK_OVERRIDES declares each Disk's overrides); a function-like macro's invocation
would count as a method. Its counts were checked against clang's AST (libclang, python3-clang)
for every class outside tests/ and fuzz/ (gtest's TEST classes, made by a macro, aside).
"""
import bisect
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lint_function_size import blank, classify, matching_brace  # noqa: E402

NAME = r"[A-Za-z_]\w*"
ATTRIBUTES = re.compile(r"\[\[.*?\]\]|\balignas\s*\((?:[^()]|\([^()]*\))*\)"
                        r"|__attribute__\s*\(\(.*?\)\)", re.S)
ACCESS = re.compile(r"\s*(?:public|private|protected)\s*:(?!:)")
# A class head: key, optional name (with template arguments), final, base clause.
RECORD_HEAD = re.compile(r"^(class|struct|union)\b\s*(" + NAME + r"(?:\s*::\s*" + NAME +
                         r")*\s*(?:<.*>)?)?\s*(?:final\s*)?(?::(?!:).*)?$", re.S)
ENUM_HEAD = re.compile(r"^enum\b")
FORWARD = re.compile(r"^(?:class|struct|union|enum(?:\s+(?:class|struct))?)\s+[\w:]+"
                     r"(?:\s*<.*>)?(?:\s*:\s*[\w:\s]+)?$")
SKIPPED = re.compile(r"^(?:using|typedef|friend|static_assert|namespace)\b")
DEFAULTED = re.compile(r"=\s*(?:default|delete)\s*$")


def skip_template(code, i, end):
    """Index after the whitespace, 'template <...>' prefixes and attributes at code[i:end]."""
    while True:
        while i < end and code[i].isspace():
            i += 1
        m = ATTRIBUTES.match(code, i, end)
        if m:
            i = m.end()
            continue
        if not code.startswith("template", i) or (i + 8 < end and ident_char(code[i + 8])):
            return i
        depth, k = 0, i + 8
        while k < end:
            if code[k] == "<":
                depth += 1
            elif code[k] == ">":
                depth -= 1
                if depth == 0:
                    k += 1
                    break
            k += 1
        i = k


def ident_char(ch):
    return ch.isalnum() or ch == "_"


def top_level(text):
    """Yields (index, char, depth) with depth counting (), [], {} and template <> brackets.

    A '<' opens a bracket only after a name (std::map<...>); after an '=' at depth 0 (an
    initialiser) angle brackets are not counted, as they may be comparisons.
    """
    depth, angle, in_init = 0, 0, False
    for k, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "<" and not in_init and k > 0 and (ident_char(text[k - 1]) or
                                                     text[k - 1] in " >"):
            if not text.startswith("<<", k) and not text.startswith("<=", k):
                angle += 1
        elif ch == ">" and not in_init and angle > 0 and text[k - 1] != "-":
            angle -= 1
        elif ch == "=" and depth == 0 and angle == 0:
            in_init = True
        elif ch == "," and depth == 0 and angle == 0:
            in_init = False
        yield k, ch, depth + angle


def is_function(decl):
    """True if a member declaration (attributes and template prefix gone) declares a function."""
    if re.search(r"\boperator\b", decl):
        return True
    for k, ch, depth in top_level(decl):
        if ch == "=" and depth == 0:
            return False
        if ch == "(" and depth == 1:
            before = decl[:k].rstrip()
            after = decl[k + 1:].lstrip()
            if before.endswith("decltype") or before.endswith("noexcept"):
                continue
            if after[:1] in ("*", "&", "^"):  # a pointer to function: a field
                return False
            return bool(before) and (ident_char(before[-1]) or before[-1] == ">")
    return False


def declarators(decl):
    """The number of declarators in a data member declaration ("int a = 1, b;" is 2)."""
    return 1 + sum(1 for _, ch, depth in top_level(decl) if ch == "," and depth == 0)


class Record:
    def __init__(self, name, line):
        self.name, self.line = name, line
        self.methods, self.fields = 0, 0


class Scanner:
    def __init__(self, code, macros):
        self.code = code
        self.macros = macros  # object-like macro name -> its body, blanked
        self.records = []
        self.line_starts = [0] + [k + 1 for k, ch in enumerate(code) if ch == "\n"]

    def line_of(self, index):
        return bisect.bisect_right(self.line_starts, index)

    def record_head(self, start, brace):
        """(key, name, index of key) if code[start:brace] is a class head, else None."""
        i = skip_template(self.code, start, brace)
        m = ACCESS.match(self.code, i, brace)
        while m:
            i = skip_template(self.code, m.end(), brace)
            m = ACCESS.match(self.code, i, brace)
        head = ATTRIBUTES.sub(" ", self.code[i:brace]).strip()
        head = " ".join(head.split())
        m = RECORD_HEAD.match(head)
        if not m:
            return None
        name = m.group(2) or f"(anonymous {m.group(1)})"
        return m.group(1), " ".join(name.split()), i

    def scan_namespace(self, i, end):
        """Walks namespace scope code[i:end]: finds class definitions, skips everything else."""
        code = self.code
        header_start = i
        while i < end:
            ch = code[i]
            if ch in ";}":
                header_start = i + 1
            elif ch == "{":
                close = matching_brace(code, i)
                head = self.record_head(header_start, i)
                if head:
                    record = Record(head[1], self.line_of(head[2]))
                    self.scan_class(record, i + 1, close)
                    i = close  # declarators after the body, if any, end at ';'
                else:
                    header = code[header_start:i]
                    kind = classify(header)
                    if kind == "scope" and not ENUM_HEAD.match(header.strip()):
                        header_start = i + 1  # a namespace or extern "C": walk inside
                    else:  # skipped whole: a function body (local classes and all), an
                        if kind == "function":  # enum's body or an initialiser
                            header_start = close + 1
                        i = close
            i += 1

    def scan_class(self, record, i, end):
        """Counts the members of the class body code[i:end]; nested classes are scanned too."""
        code = self.code
        self.records.append(record)
        decl = []  # the member declaration so far, with skipped braces as "{}"
        start = i  # where the text not yet in decl begins
        member_start = i
        while i < end:
            ch = code[i]
            if ch == ";":
                decl.append(code[start:i])
                self.count_member(record, "".join(decl))
                decl, start, member_start = [], i + 1, i + 1
            elif ch == "{":
                close = matching_brace(code, i)
                decl.append(code[start:i])
                text = "".join(decl)
                head = self.record_head(member_start, i)
                if head:
                    nested = Record(head[1], self.line_of(head[2]))
                    self.scan_class(nested, i + 1, close)
                    name = "" if head[1].startswith("(anonymous") else head[1]
                    decl = [code[member_start:head[2]], f"{head[0]} {name} {{}}"]
                elif classify(text) == "function":  # its body ends the member
                    self.count_member(record, text)
                    decl, member_start = [], close + 1
                else:  # an initialiser, or an enum's body
                    decl.append("{}")
                i = close
                start = close + 1
            i += 1

    def count_member(self, record, decl):
        """Adds one member declaration (without its ';' or body) to record's counts."""
        d = decl
        while True:
            m = ACCESS.match(d)
            if m:
                d = d[m.end():]
                continue
            k = skip_template(d, 0, len(d))
            if k == 0:
                break
            d = d[k:]
        d = " ".join(ATTRIBUTES.sub(" ", d).split())
        if re.fullmatch(NAME, d):  # a macro: its members count (an unknown one: nothing)
            if d in self.macros:
                expanded = Scanner(self.macros[d] + ";", self.macros)
                inner = Record(d, 0)
                expanded.scan_class(inner, 0, len(expanded.code))
                record.methods += inner.methods
                record.fields += inner.fields
            return
        if not d or SKIPPED.match(d):
            return
        key = re.match(r"^(class|struct|union|enum)\b", d)
        if key and "{}" in d:  # a nested class or enum: only its declarators are members
            after = d[d.rindex("{}") + 2:].strip()
            if after:
                record.fields += declarators(after)
            elif key.group(1) in ("struct", "union") and re.match(
                    r"^(?:struct|union)\s*\{\}$", d):
                record.fields += 1  # an anonymous union or struct
            return
        if key and FORWARD.match(d):
            return
        if is_function(d):
            if not DEFAULTED.search(d):
                record.methods += 1
            return
        if re.match(r"^(?:static|inline\s+static|constexpr\s+static)\b", d):
            return
        record.fields += declarators(d)


OBJECT_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(" + NAME + r")(?![(\w])((?:.*\\\n)*.*)",
                          re.M)


def read_sources(paths):
    """{path: text} and the object-like macros they define (URINGMQ_DISK_OVERRIDES declares a
    Disk's overrides in each implementation's class body)."""
    texts, macros = {}, {}
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            texts[path] = f.read()
        if "define" in texts[path]:
            for m in OBJECT_MACRO.finditer(texts[path]):
                macros[m.group(1)] = blank(m.group(2).replace("\\\n", "\n"))
    return texts, macros


def classes(text, macros):
    """The Records of the class definitions in a file's text."""
    scanner = Scanner(blank(text), macros)
    scanner.scan_namespace(0, len(scanner.code))
    return scanner.records


def read_allow(path):
    allowed = set()
    if not path:
        return allowed
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                file, name = line.split(None, 1)
                allowed.add((file, name.strip()))
    return allowed


def main(argv):
    limits = {"--max-methods": 40, "--max-fields": 30}
    allow_path = None
    while argv and argv[0].startswith("--"):
        if argv[0] == "--allow":
            allow_path = argv[1]
        else:
            limits[argv[0]] = int(argv[1])
        argv = argv[2:]
    allowed = read_allow(allow_path)
    used = set()
    bad = 0
    texts, macros = read_sources(argv)
    for path in argv:
        for record in classes(texts[path], macros):
            problems = []
            for what, count, key in (("methods", record.methods, "--max-methods"),
                                     ("fields", record.fields, "--max-fields")):
                if count > limits[key]:
                    problems.append(f"{path}:{record.line}: class {record.name} has {count} "
                                    f"{what} (max {limits[key]})")
            if problems and (path, record.name) in allowed:
                used.add((path, record.name))
                for problem in problems:
                    print(f"allowed (to split): {problem}")
            else:
                for problem in problems:
                    print(problem)
                    bad += 1
    for path, name in sorted(allowed - used):
        print(f"{allow_path}: {path} {name} is within the limits now: take it off the list")
        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
