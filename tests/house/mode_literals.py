"""The literals that name a mode, for modes_stay_home.sh: one process for
every file instead of several per file.

  mode_literals.py MODES < FILES   (MODES: a|b|c; FILES: one path a line)

Prints FILE|LINE|NAME|TEXT for each string literal (comments stripped from
C++; docstrings skipped in Python, which document as comments do) that holds
a mode's name as a word, and FILE|LINE|include|TEXT for each include of a
mode's folder (daemon/modes/<name>/)."""
import ast
import re
import sys

modes = sys.argv[1]
word = re.compile(r"(?:^|[^A-Za-z0-9_-])(" + modes + r")(?=[^A-Za-z0-9_-]|$)")
include = re.compile(r'#include "daemon/modes/[a-z_]+/')
cxx_literal = re.compile(r'"(?:[^"\\]|\\.)*"')


def python_literals(text):
    tree = ast.parse(text)
    docs = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant):
            docs.add(id(body[0].value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, repr(node.value).replace("\n", " ")


def cxx_literals(text):
    for n, line in enumerate(text.splitlines(), 1):
        for literal in cxx_literal.findall(re.sub(r"//.*$", "", line)):
            yield n, literal


for path in sys.stdin.read().split():
    text = open(path, encoding="utf-8", errors="replace").read()
    if not path.endswith(".py"):
        for n, line in enumerate(text.splitlines(), 1):
            if include.search(line):
                print(f"{path}|{n}|include|{line.strip()}")
    found = python_literals(text) if path.endswith(".py") else cxx_literals(text)
    for n, literal in found:
        for name in sorted(set(word.findall(literal))):
            print(f"{path}|{n}|{name}|{literal}")
