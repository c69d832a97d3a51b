#!/usr/bin/env python3
"""kevo.llm against a real loopback server (llm_server.py) with scripted faults, both APIs:
runs tests/integration/llm_faults.lua with `kevo script`, then the multi-turn example
(examples/llm_chat.lua) and `kevo doctor --json` against the same server."""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("KEVO_SRC", os.path.dirname(os.path.dirname(HERE)))
KEVO = os.environ["KEVO"]
SECRET = "sk-kevo-test-SECRET-5f2a9c"
failed = 0


def report(ok, what, detail=""):
    global failed
    if not ok:
        failed += 1
        print("FAIL %s\n%s" % (what, detail))
    else:
        print("ok   %s" % what)


server = subprocess.Popen([sys.executable, os.path.join(HERE, "llm_server.py")],
                          stdout=subprocess.PIPE, text=True)
try:
    line = server.stdout.readline()
    port = int(line.split()[1])
    url = "http://127.0.0.1:%d" % port
    tmp = tempfile.mkdtemp(prefix="kevo-llm-")
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(KEVO_TEST_LLM_URL=url, KEVO_TEST_SECRET=SECRET,
               KEVO_TEST_DB=os.path.join(tmp, "kevo.db"))

    p = subprocess.run([KEVO, "script", os.path.join(HERE, "llm_faults.lua")], env=env,
                       cwd=tmp, capture_output=True, text=True, timeout=120)
    print(p.stdout, end="")
    report(p.returncode == 0, "llm_faults.lua", p.stderr[-3000:])
    report(SECRET not in p.stdout + p.stderr, "the key never appears in output")
    db = os.path.join(tmp, "kevo.db")
    report(os.path.exists(db), "the archive file exists")
    if os.path.exists(db):  # the raw bodies are in the file
        con = sqlite3.connect(db)
        dump = "\n".join(con.iterdump())
        con.close()
        report("<html>oops" in dump, "malformed body stored raw in the archive")
        report(SECRET not in dump, "the key is not in the archive")

    # The example: a multi-turn kernel-writing conversation against an OpenAI-compatible server.
    with open(os.path.join(tmp, "kevo.conf"), "w") as f:
        f.write("# project settings\nllm = vllm:chat/kernel\nllm.base_url = %s/v1\n" % url)
    p = subprocess.run([KEVO, "script", os.path.join(SRC, "examples", "llm_chat.lua"), "", "3"],
                       env=env, cwd=tmp, capture_output=True, text=True, timeout=60)
    out = p.stdout
    report(p.returncode == 0 and "turn 3: candidate 2" in out and "launch block" in out
           and "llm: 3 calls" in out, "examples/llm_chat.lua, 3 turns", out + p.stderr)
    p = subprocess.run([KEVO, "script", os.path.join(HERE, "llm_server_log.lua"), url],
                       env=env, cwd=tmp, capture_output=True, text=True, timeout=30)
    report(p.returncode == 0, "the conversation carried feedback turn to turn",
           p.stdout + p.stderr)

    # kevo doctor (the lead's command) reports the configured provider and that it answers.
    env2 = dict(env, KEVO_LLM="vllm:doctor/ok", KEVO_LLM_BASE_URL=url + "/v1")
    p = subprocess.run([KEVO, "doctor", "--json"], env=env2, cwd=tmp, capture_output=True,
                       text=True, timeout=60)
    try:
        rows = json.loads(p.stdout)["checks"]
        llm_row = [r for r in rows if r["item"] == "LLM"][0]
        report(llm_row["ok"] is True and "vllm:doctor/ok" in llm_row["detail"],
               "kevo doctor: LLM row", json.dumps(llm_row))
    except (ValueError, KeyError, IndexError) as e:
        report(False, "kevo doctor --json", "%s\n%s%s" % (e, p.stdout, p.stderr))

    # kevo doctor against a server that accepts the request and never answers, the key's
    # variable unset: the fix is about the URL and the server, not `export OPENAI_API_KEY`.
    tmp2 = tempfile.mkdtemp(prefix="kevo-doctor-")
    with open(os.path.join(tmp2, "kevo.conf"), "w") as f:
        f.write("llm.stall_timeout = 1\n")
    env3 = {k: v for k, v in env.items() if k != "OPENAI_API_KEY"}
    env3.update(KEVO_LLM="openai:doctor/stall", KEVO_LLM_BASE_URL=url + "/v1")
    p = subprocess.run([KEVO, "doctor"], env=env3, cwd=tmp2, capture_output=True, text=True,
                       timeout=60)
    fix = [l for l in p.stdout.splitlines() if "fix:" in l and (url + "/v1") in l]
    report(fix and "export" not in fix[0] and "URL" in fix[0],
           "kevo doctor: a stalling server's fix names the URL and the server", p.stdout)
finally:
    server.kill()
    server.wait()

print("llm: %s" % ("all passed" if failed == 0 else "%d failed" % failed))
sys.exit(1 if failed else 0)
