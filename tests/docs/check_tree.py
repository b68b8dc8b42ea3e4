#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""The docs say what the tree has (ctest label docs).

  check_tree.py devices TOP   the device list: every directory of
      userspace/hostd/devices/ is a device NAME with kernel/NAME/,
      core/include/vbus/NAME.h and docs/devices/NAME.md, named in README.md
      and docs/design.md; kernel/ holds nothing else but KERNEL_NOT_DEVICES
  check_tree.py labels TOP    the ordering-label table of docs/ring.md
      ("## Ordering labels"): every label in it is in a comment in core/,
      and every label in a comment of the code (*.c, *.h, the spin models'
      *.pml) is in it
  check_tree.py barriers TOP  the guest orders against the host with the
      virt_* barriers: an smp_* barrier in kernel/ or core/ is a compiler
      barrier on a CONFIG_SMP=n guest, so each one must say in a comment
      ending at most BARRIER_NEAR lines above it (or on its line) that
      it is "guest-internal" (both sides CPUs of this kernel)
  check_tree.py selftest      the checks fail on made-up trees with one
      thing wrong each, and pass on the same trees put right

Prints one line per finding ("FAIL: ...") and a summary; exits 1 on any."""
import os
import re
import subprocess
import sys
import tempfile

DEVICES_DIR = "userspace/hostd/devices"
# kernel/ directories that are not devices: the bus, the transport, the
# kernel glue of core/, the in-guest tests, the shared headers
KERNEL_NOT_DEVICES = {"bus", "pci_bridge", "platform", "selftest", "include"}
RING_DOC = "docs/ring.md"
LABEL_HEADING = "## Ordering labels"
# "[R1]", "[A4]", "[B0]": one capital letter and a number
LABEL = re.compile(r"\[[A-Z][0-9]+\]")
CODE_EXT = (".c", ".h", ".pml")
# smp_* barriers: against the host they must be virt_* (issue 20.8)
SMP_BARRIER = re.compile(
    r"\bsmp_(mb|rmb|wmb|load_acquire|store_release|mb__before_atomic|"
    r"mb__after_atomic|acquire__after_ctrl_dep)\s*\(")
BARRIER_DIRS = ("kernel/", "core/")
BARRIER_NEAR = 8
GUEST_INTERNAL = "guest-internal"


def subdirs(path):
    if not os.path.isdir(path):
        return []
    return sorted(d for d in os.listdir(path)
                  if os.path.isdir(os.path.join(path, d)))


def check_devices(top):
    """Returns the findings (strings) of the device-list check."""
    bad = []
    devices = subdirs(os.path.join(top, DEVICES_DIR))
    if not devices:
        return [f"no device directories in {DEVICES_DIR}/"]
    texts = {}
    for doc in ("README.md", "docs/design.md"):
        try:
            with open(os.path.join(top, doc), encoding="utf-8") as f:
                texts[doc] = f.read()
        except OSError as e:
            bad.append(f"{doc}: cannot read ({e.strerror})")
    for name in devices:
        for path, what in ((f"kernel/{name}/", "its guest driver"),
                           (f"core/include/vbus/{name}.h", "its wire ABI header"),
                           (f"docs/devices/{name}.md", "its page")):
            if not os.path.exists(os.path.join(top, path)):
                bad.append(f"device {name} ({DEVICES_DIR}/{name}/): {path} "
                           f"({what}) is missing")
        word = re.compile(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])")
        for doc, text in texts.items():
            if not word.search(text):
                bad.append(f"device {name}: {doc} does not name it")
    for d in subdirs(os.path.join(top, "kernel")):
        if d not in devices and d not in KERNEL_NOT_DEVICES:
            bad.append(f"kernel/{d}/ is neither a device ({DEVICES_DIR}/{d}/"
                       f" is missing) nor one of "
                       f"{', '.join(sorted(KERNEL_NOT_DEVICES))}")
    if not bad:
        print(f"ok: {len(devices)} devices ({' '.join(devices)}): kernel/, "
              "core/include/vbus/, docs/devices/, README.md, docs/design.md")
    return bad


def table_labels(top):
    """The labels of the table under LABEL_HEADING: ({label: line}, findings)."""
    path = os.path.join(top, RING_DOC)
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        return {}, [f"{RING_DOC}: cannot read ({e.strerror})"]
    labels, bad, inside = {}, [], False
    for n, line in enumerate(lines, 1):
        if line.startswith("#"):
            inside = line.strip() == LABEL_HEADING
            continue
        if not inside or not line.startswith("|"):
            continue
        cell = line.split("|")[1].strip()
        if cell in ("label", "") or set(cell) <= set("-: "):
            continue    # header row, separator row
        if not LABEL.fullmatch(cell):
            bad.append(f"{RING_DOC}:{n}: '{cell}' is not a label like [R1]")
        elif cell in labels:
            bad.append(f"{RING_DOC}:{n}: {cell} has a row already "
                       f"(line {labels[cell]})")
        else:
            labels[cell] = n
    if not labels and not bad:
        bad.append(f"{RING_DOC}: no label table under '{LABEL_HEADING}'")
    return labels, bad


def comments(text):
    """(line, text) of each C comment (// and /* */), strings skipped."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append((line, text[i:j]))
            line += text.count("\n", i, j)
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            line += c == "\n"
            i += 1
    return out


def code_files(top):
    """The tree's *.c/*.h/*.pml: git's list (tracked and not ignored),
    or, outside a checkout, every such file below TOP."""
    try:
        out = subprocess.run(
            ["git", "-C", top, "ls-files", "-z", "--cached", "--others",
             "--exclude-standard"], check=True, capture_output=True).stdout
        files = [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = [os.path.relpath(os.path.join(d, f), top)
                 for d, _, fs in os.walk(top) for f in fs]
    return sorted(f for f in files if f.endswith(CODE_EXT)
                  and os.path.isfile(os.path.join(top, f)))


def check_labels(top):
    """Returns the findings (strings) of the ordering-label check."""
    table, bad = table_labels(top)
    used = {}   # label -> ["file:line", ...]
    for f in code_files(top):
        with open(os.path.join(top, f), encoding="utf-8",
                  errors="replace") as fh:
            text = fh.read()
        for line, comment in comments(text):
            for k, part in enumerate(comment.split("\n")):
                for m in LABEL.finditer(part):
                    used.setdefault(m.group(), []).append(f"{f}:{line + k}")
    for label in sorted(table):
        if not any(w.startswith("core/") for w in used.get(label, ())):
            bad.append(f"{RING_DOC}:{table[label]}: {label} is in no comment "
                       "in core/ (where the ordering it names is)")
    for label in sorted(set(used) - set(table)):
        bad.append(f"{label} is not in the table of {RING_DOC} but is used "
                   f"at {', '.join(used[label])}")
    if table and not bad:
        print(f"ok: the {len(table)} labels of {RING_DOC} "
              f"({' '.join(sorted(table))}) are in core/'s comments, and "
              f"the code's comments ({sum(map(len, used.values()))} uses) "
              "cite no other")
    return bad


def blank_comments(text):
    """TEXT with every comment and string blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i) or text.startswith("/*", i):
            j = (text.find("\n", i) if text[i + 1] == "/"
                 else text.find("*/", i + 2))
            j = n if j < 0 else (j if text[i + 1] == "/" else j + 2)
        elif text[i] in "\"'":
            j = i + 1
            while j < n and text[j] != text[i] and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            out.append(text[i])
            i += 1
            continue
        out.append("".join(c if c == "\n" else " " for c in text[i:j]))
        i = j
    return "".join(out)


def check_barriers(top):
    """Returns the findings (strings) of the host-barrier check."""
    bad, seen = [], 0
    for f in code_files(top):
        if not f.startswith(BARRIER_DIRS) or f.endswith(".pml"):
            continue
        with open(os.path.join(top, f), encoding="utf-8",
                  errors="replace") as fh:
            text = fh.read()
        # the last line of each comment that says guest-internal
        said = set()
        for line, comment in comments(text):
            if GUEST_INTERNAL in comment:
                said.add(line + comment.count("\n"))
        for n, code in enumerate(blank_comments(text).split("\n"), 1):
            for m in SMP_BARRIER.finditer(code):
                seen += 1
                if not any(n - BARRIER_NEAR <= e <= n for e in said):
                    bad.append(f"{f}:{n}: {m.group().rstrip('( ')}() orders "
                               "only against CPUs of this kernel (a compiler "
                               "barrier on CONFIG_SMP=n): against the host use "
                               "the virt_* barrier, or say in its comment that "
                               f"it is {GUEST_INTERNAL}")
    if not bad:
        print(f"ok: {seen} smp_* barrier(s) in {' '.join(BARRIER_DIRS)}, "
              f"each {GUEST_INTERNAL}; the rest order with virt_*")
    return bad


# ---- selftest: made-up trees, one thing wrong each -------------------------

def write(top, path, text=""):
    full = os.path.join(top, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as f:
        f.write(text)


RING_MD = f"""# ring

{LABEL_HEADING}

| label | where | orders | pairs with |
|---|---|---|---|
| [R1] | `push()` | bodies before tail | [A1] |
| [A1] | `pop()` | tail before bodies | [R1] |

## Versions
| [Z9] | not in the label table | - | - |
"""
CORE_C = """/* the tail store [R1] */
int push(void) { return 0; }
// pairs with [R1]: [A1]
const char *s = "[Q1] in a string is no label";
"""


FOO_IRQ_C = """/* the state the host wrote, before what it guards */
static int g(int *p) { return virt_load_acquire(p); }
const char *s = "smp_rmb(";
/* guest-internal: the irq handler's store before the count */
static void f(void) { smp_wmb(); }
"""


def good_tree(top):
    write(top, f"{DEVICES_DIR}/foo/CMakeLists.txt")
    write(top, "kernel/foo/Kbuild")
    for d in sorted(KERNEL_NOT_DEVICES):
        write(top, f"kernel/{d}/Kbuild")
    write(top, "core/include/vbus/foo.h")
    write(top, "docs/devices/foo.md", "# foo\n")
    write(top, "README.md", "Devices: foo.\n")
    write(top, "docs/design.md", "The foo device.\n")
    write(top, RING_DOC, RING_MD)
    write(top, "core/ring.c", CORE_C)
    write(top, "kernel/foo/foo.c", "/* after [A1] */\n")
    write(top, "kernel/foo/irq.c", FOO_IRQ_C)


def edit(top, path, old, new):
    full = os.path.join(top, path)
    with open(full, encoding="utf-8") as f:
        text = f.read()
    assert old in text, (path, old)
    with open(full, "w", encoding="utf-8") as f:
        f.write(text.replace(old, new, 1))


# each: what is wrong, the check, how to break the good tree
BROKEN = [
    ("a device without docs/devices/NAME.md", check_devices,
     lambda t: os.remove(os.path.join(t, "docs/devices/foo.md"))),
    ("a device without its kernel/ driver", check_devices,
     lambda t: os.rename(os.path.join(t, "kernel/foo"),
                         os.path.join(t, "kernel/foo.old"))),
    ("a device without its core/include/vbus/ header", check_devices,
     lambda t: os.remove(os.path.join(t, "core/include/vbus/foo.h"))),
    ("a device README.md does not name", check_devices,
     lambda t: edit(t, "README.md", "foo.", "bar.")),
    ("a device docs/design.md names only as part of a word", check_devices,
     lambda t: edit(t, "docs/design.md", "foo device", "foo_bar device")),
    ("a kernel/ directory that is no device", check_devices,
     lambda t: write(t, "kernel/stray/Kbuild")),
    ("a row deleted from the label table", check_labels,
     lambda t: edit(t, RING_DOC, "| [A1] | `pop()` | tail before bodies | [R1] |\n", "")),
    ("a made-up label in a comment", check_labels,
     lambda t: write(t, "kernel/foo/bar.c", "/*\n * see [R7]\n */\n")),
    ("a label in a // comment of a header", check_labels,
     lambda t: write(t, "userspace/x.h", "int x; // [B3]\n")),
    ("a table label no comment in core/ has", check_labels,
     lambda t: edit(t, "core/ring.c", "// pairs with [R1]: [A1]", "// pairs")),
    ("a duplicated row", check_labels,
     lambda t: edit(t, RING_DOC, "| [A1] | `pop()`",
                    "| [R1] | `again()` | - | - |\n| [A1] | `pop()`")),
    ("smp_load_acquire() on host memory", check_barriers,
     lambda t: edit(t, "kernel/foo/irq.c", "virt_load_acquire", "smp_load_acquire")),
    ("a guest-internal comment too far above its barrier", check_barriers,
     lambda t: edit(t, "kernel/foo/irq.c", "*/\nstatic void f",
                    "*/\n" + "\n" * BARRIER_NEAR + "static void f")),
    ("an smp_ barrier in core/ with no comment", check_barriers,
     lambda t: write(t, "core/x.h", "#define X() smp_mb()\n")),
    ("no label table at all", check_labels,
     lambda t: edit(t, RING_DOC, LABEL_HEADING, "## Labels")),
]


def selftest():
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        top = os.path.join(tmp, "good")
        good_tree(top)
        for check in (check_devices, check_labels, check_barriers):
            bad = check(top)
            if bad:
                failed += 1
                print(f"FAIL: {check.__name__} on the good tree: {bad}")
        for k, (what, check, breakit) in enumerate(BROKEN):
            top = os.path.join(tmp, f"bad{k}")
            good_tree(top)
            breakit(top)
            bad = check(top)
            if bad:
                print(f"ok: {what}: {bad[0]}")
            else:
                failed += 1
                print(f"FAIL: {check.__name__} passes {what}")
    return failed


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "selftest":
        failed = selftest()
        print(f"{failed} check(s) that did not fail or pass as they must")
        return 1 if failed else 0
    checks = {"devices": check_devices, "labels": check_labels,
              "barriers": check_barriers}
    if len(sys.argv) != 3 or sys.argv[1] not in checks:
        print(__doc__, file=sys.stderr)
        return 2
    top = sys.argv[2]
    bad = checks[sys.argv[1]](top)
    for b in bad:
        print(f"FAIL: {b}")
    if bad:
        print(f"{len(bad)} finding(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
