#!/usr/bin/env python3
# Writes the seed corpus of fuzz/sql_filter_fuzz.cc into fuzz/corpus/sql_filter/: SQL92
# expressions, each with a property string after a NUL (name \x01 value, joined by \x02).
import os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sql_filter")


def props(*pairs):
    return "\x02".join(f"{n}\x01{v}" for n, v in pairs)


SEEDS = {
    "and_in.txt": ("a > 5 AND color IN ('red', 'blue')", props(("a", "7"), ("color", "red"))),
    "between.txt": ("a NOT BETWEEN -2 AND 4.5e1 OR b BETWEEN 1 AND 2", props(("a", "3"))),
    "null.txt": ("a IS NULL AND b IS NOT NULL OR NOT (c <> 'x')", props(("b", "1"))),
    "strings.txt": ("TAGS = 'it''s' OR KEYS NOT IN ('k1')", props(("TAGS", "it's"))),
    "mismatch.txt": ("a = 5 OR a > b OR a = TRUE", props(("a", "red"), ("b", "7.5"))),
    "comments.txt": ("/* c */ a = 1L -- tail\n", props(("a", "1"))),
    "errors.txt": ("a > 'x' OR 5 IN ('a') OR a BETWEEN 5 AND 1", ""),
    "deep.txt": ("(" * 70 + "a = 1" + ")" * 70, props(("a", "1"))),
    "unterminated.txt": ("a = 'x", ""),
}

os.makedirs(HERE, exist_ok=True)
for name, (expression, properties) in SEEDS.items():
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(expression.encode() + b"\x00" + properties.encode())
