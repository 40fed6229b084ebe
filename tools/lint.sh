#!/usr/bin/env bash
# Checks the house rules a reviewer would otherwise check by eye; tools/test.sh runs it first and
# counts it as one test. Exits non-zero with a list of every problem, one per line, if any fails:
#   functions  no C++ function body over 100 lines outside tests/ and fuzz/ (fuzz targets are test
#              drivers). A function that does not fit on two screens hides its steps; 100 is the
#              hard limit, about 70 the aim. Counted by tools/lint_function_size.py (a brace
#              matcher: clang-tidy's readability-function-size takes minutes over the tree).
#   classes    no class or struct outside tests/ and fuzz/ with more than 40 methods or more
#              than 30 fields. A class that holds everything hides its parts: past that it is
#              several objects sharing one set of members, each unable to be read, tested or
#              changed alone. Counted per class definition (a nested class on its own) by
#              tools/lint_class_size.py, a scanner checked against clang's AST. The classes in
#              tools/lint_class_size_allow.txt are printed as "allowed (to split)" and do not
#              fail; that list only shrinks, and an entry within the limits fails until removed.
#   layers     net/core/ includes no header of net/remoting/ (nor net/server/): the broker core
#              knows no wire, so a second protocol is a second adapter over it. Every file
#              in net/ also stays within 1,000 lines (net/README.md, "Layout").
#   columns    no line over 100 columns (characters) in *.h, *.cc, *.sh, *.js, *.py and
#              CMakeLists.txt. Markdown is not checked: its tables and links may be long, and
#              its prose is reviewed as prose.
#   format     clang-format clean (`clang-format --dry-run -Werror` with the committed
#              .clang-format) over every *.h and *.cc, so layout is never a review comment.
#   commits    every commit after BASE (merges too) has a subject of at most 72 characters and
#              a body that says why. History before BASE cannot be rewritten and is not checked.
#              Skipped, with a line saying so, outside a git checkout or in a shallow clone.
# Files are those git knows (tracked, or untracked and not ignored): build directories and
# node_modules are never checked. Usage: tools/lint.sh (from anywhere).
set -uo pipefail
cd "$(dirname "$0")/.."

readonly BASE=0661e34d3588e61d9a03a3af2df8ca1b9182978c
readonly MAX_FUNCTION_LINES=100
readonly MAX_METHODS=40
readonly MAX_FIELDS=30
readonly MAX_COLUMNS=100
readonly MAX_SUBJECT=72

failed=()
# check NAME OUTPUT: prints the problems of one check and records its failure.
check() {
  local name=$1 output=$2
  if [ -z "$output" ]; then
    echo "lint: $name: ok"
    return
  fi
  local count
  count=$(wc -l <<<"$output")
  echo "lint: $name: $count problem(s)"
  sed 's/^/  /' <<<"$output"
  failed+=("$name")
}

in_git=0
git rev-parse --is-inside-work-tree >/dev/null 2>&1 && in_git=1

# files PATTERN...: the files matching the git pathspecs, one per line.
files() {
  if [ "$in_git" = 1 ]; then
    git ls-files --cached --others --exclude-standard -- "$@"
  else
    local names=()
    for p in "$@"; do names+=(-o -name "${p##*/}"); done
    find . \( -name 'build*' -o -name node_modules -o -name .git \) -prune -o -type f \
      \( "${names[@]:1}" \) -print | sed 's|^\./||'
  fi | grep -v -E '(^|/)(node_modules|package-lock\.json)(/|$)' | sort -u
}

mapfile -t cxx < <(files '*.h' '*.cc')
mapfile -t cxx_non_test < <(printf '%s\n' "${cxx[@]}" | grep -v -E '^(tests|fuzz)/')
mapfile -t text < <(files '*.h' '*.cc' '*.sh' '*.js' '*.py' 'CMakeLists.txt' '*/CMakeLists.txt')

# functions
check functions "$(python3 tools/lint_function_size.py --max "$MAX_FUNCTION_LINES" \
  "${cxx_non_test[@]}")"

# classes
class_out=$(python3 tools/lint_class_size.py --max-methods "$MAX_METHODS" \
  --max-fields "$MAX_FIELDS" --allow tools/lint_class_size_allow.txt "${cxx_non_test[@]}")
check classes "$(grep -v '^allowed (to split): ' <<<"$class_out")"
grep '^allowed (to split): ' <<<"$class_out" | sed 's/^/  /'

# layers
check layers "$( (git grep -n -E '#include "net/(remoting|server)/' -- 'net/core/*' || true)
  for f in $(git ls-files 'net/*.h' 'net/*.cc'); do
    [ -f "$f" ] && [ "$(wc -l <"$f")" -gt 1000 ] && echo "$f: $(wc -l <"$f") lines (max 1000)"
  done)"

# columns
check columns "$(python3 - "$MAX_COLUMNS" "${text[@]}" <<'EOF'
import sys
limit = int(sys.argv[1])
for path in sys.argv[2:]:
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            width = len(line.rstrip("\n"))
            if width > limit:
                print(f"{path}:{number}: {width} columns (limit {limit})")
EOF
)"

# format
if command -v clang-format >/dev/null 2>&1; then
  format_out=$(clang-format --dry-run -Werror "${cxx[@]}" 2>&1 |
                 grep -E '^[^ ]+:[0-9]+:[0-9]+: error' | cut -d: -f1 | sort | uniq -c |
                 awk '{print $2 ": not clang-format clean (" $1 " place(s))"}')
  check format "$format_out"
else
  check format "clang-format not found (tools/install-deps.sh installs it)"
fi

# commits
if [ "$in_git" = 0 ]; then
  echo "lint: commits: skipped (not a git checkout)"
elif [ "$(git rev-parse --is-shallow-repository)" = true ] ||
     ! git cat-file -e "$BASE^{commit}" 2>/dev/null; then
  echo "lint: commits: skipped (shallow clone or no history back to $BASE)"
else
  # One git log for all of them (a git and a python per commit took a minute at 500 commits).
  commit_out=$(git log --format='%H%x00%s%x00%b%x01' "$BASE..HEAD" |
    python3 -c '
import sys
limit = int(sys.argv[1])
for record in sys.stdin.read().split("\x01"):
    record = record.lstrip("\n")
    if not record:
        continue
    commit, subject, body = record.split("\x00", 2)
    if len(subject) > limit:
        print(f"{commit[:10]}: subject has {len(subject)} characters (limit {limit}): {subject}")
    if not body.strip():
        print(f"{commit[:10]}: no body saying why: {subject}")
' "$MAX_SUBJECT")
  check commits "${commit_out%$'\n'}"
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "lint: FAILED: ${failed[*]}"
  exit 1
fi
echo "lint: passed"
