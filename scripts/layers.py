#!/usr/bin/env python3
"""layers.py: hibard's layering, measured: include and call cycles between daemon files and folders.

Usage: scripts/layers.py [--verbose] [--strict-status] [SRCDIR]

Reads the C sources (no build needed) and builds two graphs over daemon/:
  includes  module A -> module B when a file of A includes B's header
  calls     module A -> module B when A calls a function that B defines
A module is a file's path without its extension (daemon/net/hbd_net.c and .h are one module);
a folder is the module's directory (daemon/net, daemon/sync, ...; daemon/ itself is the top).
A cycle is a strongly connected component of more than one node: each is listed, and any
makes the exit status 1. Registering a callback (passing a function's name) is not a call:
that is how the services hand the transport their handlers.

It also checks the bottom of the tree: a file of common/ that includes a header of libclient/
or daemon/ is an error; so is a file of the core modules (common config hwbarrier hier coll)
that includes a client header, libclient's hibar.h included (the status codes live in
common/hb_status.h). STRICT_STATUS False would list hibar.h includes as warnings only.

Exit status: 0 clean, 1 a cycle or a forbidden include, 2 usage.
"""
import os
import re
import sys
from collections import defaultdict

STRICT_STATUS = True  # common/ holds the status codes (issue 20, item 5)
STATUS_HEADERS = {"hibar.h"}  # libclient headers core modules may include until then
CORE = ["common", "config", "hwbarrier", "hier", "coll"]  # below libclient/

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# a function definition: at column 0, a name and '(' on the line, a '{' line or '{' after ')'
DEF_RE = re.compile(r"^(?:static\s+)?(?:inline\s+)?[A-Za-z_][\w\s\*]*?\b(hbd_\w+)\s*\(", re.M)
CALL_RE = re.compile(r"\b(hbd_\w+)\s*\(")
COMMENT_RE = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\])*\"", re.S)


def sources(top, sub):
    out = []
    for root, _dirs, files in os.walk(os.path.join(top, sub)):
        for f in files:
            if f.endswith((".c", ".h")):
                out.append(os.path.relpath(os.path.join(root, f), top))
    return sorted(out)


def module(path):
    return os.path.splitext(path)[0]


def folder(mod):
    return os.path.dirname(mod)


def strip(text):
    return COMMENT_RE.sub(lambda m: " " if not m.group(0).startswith('"') else '""', text)


def tarjan(graph):
    """Strongly connected components of more than one node (the cycles)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    nodes = set(graph) | {w for vs in graph.values() for w in vs}

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def edges_in(comp, graph, why):
    """The edges inside a cycle, each with an example of what makes it."""
    lines = []
    for a in comp:
        for b in sorted(graph.get(a, ())):
            if b in comp:
                lines.append("      %s -> %s  (%s)" % (a, b, ", ".join(sorted(why[(a, b)])[:3])))
    return lines


def main(argv):
    verbose = "--verbose" in argv or "-v" in argv
    strict = STRICT_STATUS or "--strict-status" in argv
    args = [a for a in argv if not a.startswith("-")]
    if any(a not in ("--verbose", "-v", "--strict-status") for a in argv if a.startswith("-")):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    top = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    top = os.path.abspath(top)
    files = sources(top, "daemon")
    if not files:
        print("layers: no daemon/ under %s" % top, file=sys.stderr)
        return 2
    text = {f: open(os.path.join(top, f), encoding="utf-8", errors="replace").read() for f in files}
    header_of = {}  # header basename -> module
    for f in files:
        if f.endswith(".h"):
            header_of[os.path.basename(f)] = module(f)

    inc, inc_why = defaultdict(set), defaultdict(set)
    for f in files:
        a = module(f)
        for h in INCLUDE_RE.findall(text[f]):
            b = header_of.get(os.path.basename(h))
            if b is not None and b != a:
                inc[a].add(b)
                inc_why[(a, b)].add(os.path.basename(h))

    defined = {}  # function -> module
    for f in files:
        for name in DEF_RE.findall(strip(text[f])):
            if name not in defined:
                defined[name] = module(f)
    # prototypes in headers are not definitions: a definition in a .c wins
    for f in files:
        if f.endswith(".c"):
            body = strip(text[f])
            for m in re.finditer(r"^[A-Za-z_][^;{}()]*\b(hbd_\w+)\s*\([^;{]*\)\s*\{", body, re.M):
                defined[m.group(1)] = module(f)
    calls, call_why = defaultdict(set), defaultdict(set)
    for f in files:
        a = module(f)
        body = strip(text[f])
        if f.endswith(".h"):  # prototypes are no calls: only the bodies of inline functions
            body = "\n".join(re.findall(r"^static inline[^;{]*\{(.*?)^\}", body, re.M | re.S))
        for name in CALL_RE.findall(body):
            b = defined.get(name)
            if b is not None and b != a:
                calls[a].add(b)
                call_why[(a, b)].add(name)

    def fold(graph, why):
        g, w = defaultdict(set), defaultdict(set)
        for a, bs in graph.items():
            for b in bs:
                fa, fb = folder(a), folder(b)
                if fa != fb:
                    g[fa].add(fb)
                    w[(fa, fb)] |= {"%s->%s" % (os.path.basename(a), os.path.basename(b))}
        return g, w

    status = 0
    checks = [("include", "files", inc, inc_why), ("call", "files", calls, call_why)]
    checks += [("include", "folders") + fold(inc, inc_why), ("call", "folders") + fold(calls, call_why)]
    for kind, level, graph, why in checks:
        cycles = tarjan(graph)
        n_edges = sum(len(v) for v in graph.values())
        print("%-7s cycles between daemon %-7s: %d (%d edges)" % (kind, level, len(cycles), n_edges))
        for comp in cycles:
            status = 1
            print("  cycle: " + " <-> ".join(comp))
            for line in edges_in(comp, graph, why):
                print(line)
        if verbose:
            for a in sorted(graph):
                for b in sorted(graph[a]):
                    print("    %s -> %s" % (a, b))

    # the bottom of the tree
    errors, warnings = [], []
    client_headers = {os.path.basename(f) for f in sources(top, "libclient") if f.endswith(".h")}
    daemon_headers = set(header_of)
    for sub in CORE:
        for f in sources(top, sub):
            src = open(os.path.join(top, f), encoding="utf-8", errors="replace").read()
            for h in INCLUDE_RE.findall(src):
                b = os.path.basename(h)
                if b in daemon_headers:
                    errors.append("%s includes %s (daemon/)" % (f, h))
                elif b in client_headers:
                    if b in STATUS_HEADERS and not strict:
                        warnings.append("%s includes %s (libclient/, for the status codes)" % (f, h))
                    else:
                        errors.append("%s includes %s (libclient/)" % (f, h))
    print("includes from the core modules (%s) up: %d errors, %d warnings"
          % (" ".join(CORE), len(errors), len(warnings)))
    for e in errors:
        print("  error: " + e)
    if verbose or len(warnings) <= 10:
        for w in warnings:
            print("  warning: " + w)
    else:
        print("  (warnings: --verbose lists them)")
    if errors:
        status = 1
    print("layers: %s" % ("clean" if status == 0 else "FAILED"))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
