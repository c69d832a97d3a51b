#!/usr/bin/env python3
"""docs/strategies.md's tutorial, run exactly as written (issue 20 item 7).

The section "## Tutorial" is read as a newcomer reads it: ```lua PATH blocks are saved as
PATH, and each `$ COMMAND` line of a ```console block is run, in order, in one bash session
(so cd and export carry over), in a directory laid out like a kevo checkout (examples/ from the
source tree) with kevo on PATH and nothing of kevo's in the environment. Every command must exit
0, and the lines shown after it must appear in its output (stdout and stderr together), in
order; `...` in a line stands for any text, a line of `...` for any lines."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ.get("KEVO_SRC", ".")
KEVO = os.environ.get("KEVO", "kevo")


def tutorial_steps(text):
    """[("file", path, content) | ("cmd", command, [expected lines])] in document order."""
    m = re.search(r"^## Tutorial.*?(?=^## )", text, re.S | re.M)
    if not m:
        sys.exit("FAIL: docs/strategies.md has no '## Tutorial' section")
    steps = []
    lines = m.group(0).split("\n")
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\w+)\s*(\S*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        kind, arg = fence.group(1), fence.group(2)
        j = i + 1
        while j < len(lines) and lines[j] != "```":
            j += 1
        body = lines[i + 1:j]
        if kind == "lua" and arg:
            steps.append(("file", arg, "\n".join(body) + "\n"))
        elif kind == "console":
            for line in body:
                if line.startswith("$ "):
                    steps.append(("cmd", line[2:], []))
                elif steps and steps[-1][0] == "cmd":
                    steps[-1][2].append(line)
        i = j + 1
    return steps


def line_pattern(expected):
    parts = [re.escape(p) for p in expected.rstrip().split("...")]
    return re.compile("^" + ".*".join(parts) + r"\s*$")


def main():
    with open(os.path.join(SRC, "docs", "strategies.md"), encoding="utf-8") as f:
        steps = tutorial_steps(f.read())
    cmds = [s for s in steps if s[0] == "cmd"]
    if len(cmds) < 5 or not any(s[0] == "file" for s in steps):
        sys.exit("FAIL: the tutorial lost its commands or files (%d commands)" % len(cmds))
    work = tempfile.mkdtemp(prefix="kevo-tutorial-")
    try:
        os.symlink(os.path.join(os.path.abspath(SRC), "examples"), os.path.join(work, "examples"))
        script = ["set -u"]
        for n, step in enumerate(steps):
            if step[0] == "file":
                script.append("cat > %s <<'KEVO_TUTORIAL_EOF'\n%sKEVO_TUTORIAL_EOF" % (step[1], step[2]))
            else:
                script.append("echo '@@step %d'; %s 2>&1; echo \"@@rc $?\"" % (n, step[1]))
        env = {k: v for k, v in os.environ.items() if not k.startswith("KEVO")}
        env["PATH"] = os.path.dirname(os.path.abspath(KEVO)) + os.pathsep + env.get("PATH", "")
        run = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, env=env,
                             capture_output=True, text=True, timeout=300)
        outputs, cur = {}, None
        for line in run.stdout.split("\n"):
            m = re.match(r"^@@step (\d+)$", line)
            if m:
                cur = int(m.group(1))
                outputs[cur] = {"lines": [], "rc": None}
                continue
            m = re.match(r"^@@rc (\d+)$", line)
            if m and cur is not None:
                outputs[cur]["rc"] = int(m.group(1))
                continue
            if cur is not None:
                outputs[cur]["lines"].append(line)
        fails = 0
        for n, step in enumerate(steps):
            if step[0] != "cmd":
                continue
            got = outputs.get(n)
            if got is None or got["rc"] != 0:
                print("FAIL $ %s: exit %s" % (step[1], got and got["rc"]))
                print("\n".join("  | " + l for l in (got or {"lines": []})["lines"]) or run.stderr)
                fails += 1
                continue
            at = 0
            for want in step[2]:
                if want.strip() in ("...", ""):
                    continue
                pat = line_pattern(want)
                while at < len(got["lines"]) and not pat.match(got["lines"][at]):
                    at += 1
                if at == len(got["lines"]):
                    print("FAIL $ %s: no line (in order) like: %s" % (step[1], want))
                    print("\n".join("  | " + l for l in got["lines"]))
                    fails += 1
                    break
                at += 1
            else:
                print("ok   $ %s" % step[1])
        if fails:
            sys.exit(1)
        print("the tutorial runs as written (%d commands)" % len(cmds))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
