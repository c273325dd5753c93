#!/usr/bin/env python3
"""What a Claude Code session really did, read from its transcript alone.

Independent of soba-lsp's importer (its own reading, written from Claude
Code's file format): every tool_use block of the file and every tool_result
block, paired by tool_use_id wherever they sit in the file — main thread,
abandoned branch, or a subagent's messages carried in agent_progress lines.

  files_modified  paths of Edit/Write/MultiEdit/NotebookEdit calls whose
                  result is not an error
  files_read      paths of Read calls whose result is not an error
  runs            every Bash command of the main thread, in file order, with
                  its outcome: "passed" (no error), "failed" ("Exit code N",
                  N != 0), "unknown" (interrupted or no result)
  request         the session has a request: a user text message that is
                  not a harness note (isMeta, <command-...>, <local-command-
                  ...>, system reminders, interruptions)

Paths under the session's first cwd are made relative to it.

usage: truth.py TRANSCRIPT.jsonl   (prints the facts as JSON)
"""
import json
import os
import re
import sys

MODIFY = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path",
          "NotebookEdit": "notebook_path"}
READ = {"Read": "file_path"}
EXIT = re.compile(r"^Exit code (\d+)")
NOT_REQUEST = ("<command-message>", "<local-command", "<system-reminder>",
               "[Request interrupted", "Caveat: The messages below",
               "<bash-input>", "<bash-stdout>", "<task-notification>")


def blocks(msg):
    c = (msg or {}).get("message", {}) if "message" in (msg or {}) else {}
    content = c.get("content") if isinstance(c, dict) else None
    return content if isinstance(content, list) else []


def text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def facts(path):
    lines = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            try:
                d = json.loads(raw)
            except ValueError:
                continue
            if isinstance(d, dict):
                lines.append(d)
    cwd = next((d["cwd"] for d in lines if d.get("cwd")), "")

    def rel(p):
        if cwd and p.startswith(cwd.rstrip("/") + "/"):
            return p[len(cwd.rstrip("/")) + 1:]
        return p

    calls = {}    # id -> (name, input, main thread?, order)
    results = {}  # id -> (is_error, text, interrupted)
    request = False
    order = 0

    def visit(msg, main, meta):
        nonlocal request, order
        role = msg.get("type")
        content = (msg.get("message") or {}).get("content")
        if role == "user" and main and not meta.get("isMeta") and not meta.get("isCompactSummary"):
            t = text_of(content) if not isinstance(content, list) else "\n".join(
                b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
            t = t.strip()
            if t and not t.startswith(NOT_REQUEST):
                request = True
            if t.startswith("<command-message>") or t.startswith("<command-name>"):
                # A slash command: its arguments are the request.
                m = re.search(r"<command-args>(.*?)</command-args>", t, re.S)
                n = re.search(r"<command-name>(.*?)</command-name>", t, re.S)
                if (m and m.group(1).strip()) or (n and not n.group(1).strip().startswith(("/exit", "/clear", "/compact", "/model", "/resume", "/login", "/cost", "/context", "/status", "/help", "/mcp", "/config", "/ide", "/rewind", "/plugin", "/usage"))):
                    request = True
        if not isinstance(content, list):
            return
        for b in content:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_use" and b.get("id"):
                order += 1
                calls.setdefault(b["id"], (b.get("name"), b.get("input") or {}, main, order))
            elif b.get("type") == "tool_result" and b.get("tool_use_id"):
                tur = meta.get("toolUseResult")
                interrupted = isinstance(tur, dict) and bool(tur.get("interrupted"))
                results[b["tool_use_id"]] = (bool(b.get("is_error")), text_of(b.get("content")), interrupted)

    for d in lines:
        t = d.get("type")
        if t in ("user", "assistant"):
            visit(d, not d.get("isSidechain"), d)
        elif t == "progress":
            data = d.get("data") or {}
            if data.get("type") == "agent_progress" and isinstance(data.get("message"), dict):
                visit(data["message"], False, data["message"])

    modified, read, runs = [], [], []
    for cid, (name, inp, main, o) in sorted(calls.items(), key=lambda kv: kv[1][3]):
        res = results.get(cid)
        ok = res is not None and not res[0]
        if name in MODIFY and ok and isinstance(inp.get(MODIFY[name]), str):
            p = rel(inp[MODIFY[name]])
            if p not in modified:
                modified.append(p)
        elif name in READ and ok and isinstance(inp.get(READ[name]), str):
            p = rel(inp[READ[name]])
            if p not in read:
                read.append(p)
        elif name == "Bash" and main and isinstance(inp.get("command"), str):
            if res is None or res[2]:
                out = "unknown"
            elif not res[0]:
                out = "passed"
            else:
                m = EXIT.match(res[1])
                out = "failed" if (m and m.group(1) != "0") else "unknown"
            runs.append({"command": inp["command"], "outcome": out})
    return {"cwd": cwd, "filesModified": modified, "filesRead": read, "runs": runs,
            "hasRequest": request}


if __name__ == "__main__":
    json.dump(facts(sys.argv[1]), sys.stdout, indent=1)
    print()
