#!/usr/bin/env python3
"""Score soba-lsp's capsules of a directory of transcripts against truth.py.

For each TRANSCRIPT.jsonl in DIR: `soba-lsp import`, then
`soba-lsp compact --dry-run` with keepRecentTokens 0 (the capsule alone must
carry the truth); the capsule's sections are compared with what truth.py
reads from the transcript:

  files modified  recall and precision (a path the capsule lists that the
                  session did not change by an edit tool must at least be
                  named by a successful shell command of the session, which
                  soba-lsp reads as a change: rm, mv, redirection, sed -i)
  files read      recall (a folded "dir/ — N files" item covers its files)
  verification    a check the capsule says passed whose last run of the same
                  command failed is a false pass; the reverse a false fail;
                  Done items saying a command passed are held to the same
                  rule
  goal            empty or a harness wrapper while the session has a request
  exits           every import and compact must exit 0

Prints one line per transcript that is not perfect, then the totals, the
time and the peak RSS; writes the per-file rows to OUT.json when given.

usage: score.py SOBA_LSP_BINARY DIR [OUT.json]
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import truth  # noqa: E402

WRAPPERS = ("<ide_", "<system-reminder", "<command-name", "<command-message", "<local-command",
            "[Request interrupted", "Caveat: The messages below", "_none_")


def run(argv, stdout):
    """Runs argv; returns (exit code, seconds, peak RSS in KiB, stderr)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, time.monotonic() - t0, ru.ru_maxrss, err.decode(errors="replace")


def sections(md):
    out, cur = {}, None
    for line in md.splitlines():
        if line.startswith("## "):
            cur = line[3:].strip()
            out[cur] = []
        elif cur is not None:
            out[cur].append(line)
    return out


def bullets(lines):
    items = []
    for line in lines:
        if line.startswith("- "):
            items.append(line[2:])
    return items


def unquote(item):
    m = re.match(r"^`(.*)`$", item)
    return m.group(1) if m else item


def covered(path, items):
    """Whether the capsule's items name path: as itself, deleted later
    ("path (deleted)"), one side of a rename ("old → new"), or inside a
    folded directory ("dir/ — N files")."""
    if path in items:
        return True
    for it in items:
        if it == path + " (deleted)" or path in it.split(" → "):
            return True
        m = re.match(r"^(.*/) — [\d,]+ files$", it)
        if m and path.startswith(m.group(1)):
            return True
    return False


def last_outcome(runs, command):
    """The outcome of the last run of command: a run of the command itself
    (also behind a leading `cd DIR &&`), or of an `A && B` chain holding it,
    which passed only if each part passed and says nothing of a part when
    it failed; a run piped into another command says nothing sure."""
    last = None
    for r in runs:
        c = re.sub(r"^cd [^&;|]+&&\s*", "", r["command"].strip())
        if c == command:
            last = r["outcome"]
            continue
        if re.match(re.escape(command) + r"(\s+[0-9]*>&?[0-9]+)*\s*\|[^|]", c):
            # Piped: the exit status is the last stage's; the run says
            # nothing sure about the command.
            last = "unknown"
            continue
        if "|" in c or ";" in c or "\n" in c:
            continue
        parts = [p.strip() for p in c.split("&&")]
        if len(parts) > 1 and command in parts:
            last = "passed" if r["outcome"] == "passed" else "unknown"
    return last


def kept_tail(session, plan):
    """Files of the tool results from the plan's "keep from entry ID" on."""
    m = re.search(r"keep from entry (\w+)", plan)
    mod, read = [], []
    if not m:
        return mod, read
    on = False
    with open(session) as fh:
        for line in fh:
            e = json.loads(line)
            on = on or e.get("id") == m.group(1)
            a = ((e.get("toolResult") or {}).get("artifacts") or {}) if on else {}
            mod += a.get("filesModified") or []
            read += a.get("filesRead") or []
    return mod, read


def score(binary, path, work, cfg):
    f = truth.facts(path)
    row = {"file": os.path.basename(path), "bytes": os.path.getsize(path)}
    session = os.path.join(work, "s.jsonl")
    if os.path.exists(session):
        os.remove(session)
    rc, secs, rss, err = run([binary, "import", "--workspace", work, "-o", session, path], subprocess.DEVNULL)
    row.update(importExit=rc, importSeconds=secs, importRSS=rss)
    if rc != 0:
        row["error"] = err.strip().splitlines()[-1:] if err.strip() else []
        return row, f
    with tempfile.TemporaryFile() as out:
        rc, secs, rss, err = run([binary, "compact", "--dry-run", "--config", cfg, "--workspace", work, session], out)
        out.seek(0)
        md = out.read().decode(errors="replace")
    row.update(compactExit=rc, compactSeconds=secs, compactRSS=rss)
    row["outcome"] = next((l.split(":", 1)[1].strip() for l in err.splitlines() if l.startswith("outcome:")), "")
    if rc != 0:
        row["error"] = err.strip().splitlines()[-1:]
        return row, f
    if not md.strip():
        row["skipped"] = True  # a no-op compaction: nothing to score
        return row, f
    s = sections(md)
    mod = [unquote(b) for b in bullets(s.get("Files modified", []))]
    read = [unquote(b) for b in bullets(s.get("Files read", []))]
    # The model goes on with the capsule and the kept tail: the cut never
    # splits the last tool batch from its call, so that batch stays
    # verbatim. Its files count for recall (not for precision).
    tail_mod, tail_read = kept_tail(session, err)
    shell_words = " ".join(r["command"] for r in f["runs"] if r["outcome"] == "passed")
    row["modTrue"] = len(f["filesModified"])
    row["modMissing"] = [p for p in f["filesModified"] if not covered(p, mod + tail_mod)]
    falsemod = []
    for p in mod:
        base = re.sub(r" \(deleted\)$", "", p)
        parts = [q.strip() for q in base.split(" → ")]
        if p in f["filesModified"] or base in f["filesModified"]:
            continue
        if all(q in shell_words or os.path.basename(q) in shell_words for q in parts):
            continue  # a shell command of the session names it
        falsemod.append(p)
    row["modListed"] = len(mod)
    row["modFalse"] = falsemod
    row["readTrue"] = len(f["filesRead"])
    row["readMissing"] = [p for p in f["filesRead"] if not covered(p, read + tail_read)]
    fp, ff = [], []
    for b in bullets(s.get("Verification", [])):
        m = re.match(r"^`(.+?)` — (passed|failed)", b)
        if not m:
            continue
        last = last_outcome(f["runs"], m.group(1))
        if m.group(2) == "passed" and last == "failed":
            fp.append(b)
        if m.group(2) == "failed" and last == "passed":
            ff.append(b)
    for b in bullets(s.get("Done", [])):
        for m in re.finditer(r"`([^`]+)` passed", b):
            if last_outcome(f["runs"], m.group(1)) == "failed":
                fp.append("Done: " + b)
    row["falsePassed"], row["falseFailed"] = fp, ff
    goal = "\n".join(s.get("Goal", [])).strip()
    row["badGoal"] = f["hasRequest"] and (goal == "" or goal.startswith(WRAPPERS))
    if row["badGoal"]:
        row["goal"] = goal[:200]
    return row, f


def by_size(rows):
    """Seconds per MB and peak RSS of import and dry-run compact by file
    size: linear when the seconds per MB do not grow with the size (small
    files carry the process start-up)."""
    out = []
    for lo, hi in ((0, 1e5), (1e5, 1e6), (1e6, 4e6), (4e6, 1e12)):
        rs = [r for r in rows if lo <= r["bytes"] < hi and "compactSeconds" in r]
        if not rs:
            continue
        mb = sum(r["bytes"] for r in rs) / 1e6
        out.append({
            "size": f"{lo / 1e6:g}-{hi / 1e6:g} MB" if hi < 1e12 else f">= {lo / 1e6:g} MB",
            "transcripts": len(rs), "megabytes": round(mb, 1),
            "importSecondsPerMB": round(sum(r["importSeconds"] for r in rs) / mb, 3),
            "compactSecondsPerMB": round(sum(r["compactSeconds"] for r in rs) / mb, 3),
            "peakImportRSSMiB": round(max(r["importRSS"] for r in rs) / 1024, 1),
            "peakCompactRSSMiB": round(max(r["compactRSS"] for r in rs) / 1024, 1),
        })
    return out


def main():
    binary, d = os.path.abspath(sys.argv[1]), sys.argv[2]
    out = sys.argv[3] if len(sys.argv) > 3 else None
    files = sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(".jsonl"))
    rows = []
    with tempfile.TemporaryDirectory() as work:
        cfg = os.path.join(work, "k0.json")
        with open(cfg, "w") as c:
            json.dump({"compaction": {"keepRecentTokens": 0}}, c)
        for p in files:
            with open(p, "rb") as fh:
                head = fh.read(64).lstrip()
            if head.startswith(b"{\n") or head.startswith(b'{"sessionId"') and b"projectHash" in head:
                rows.append({"file": os.path.basename(p), "notImportable": "Gemini CLI session (not a format soba-lsp imports)"})
                continue
            row, _ = score(binary, p, work, cfg)
            rows.append(row)
            bad = [k for k in ("modMissing", "modFalse", "readMissing", "falsePassed", "falseFailed", "error") if row.get(k)]
            if bad or row.get("badGoal") or row.get("importExit") or row.get("compactExit"):
                print(json.dumps({k: row[k] for k in row if k in bad + ["file", "badGoal", "goal", "importExit", "compactExit"]}))
    scored = [r for r in rows if "importExit" in r]
    t = lambda k: sum(r.get(k, 0) for r in scored)
    n = lambda k: sum(len(r.get(k, [])) for r in scored)
    mod_true, mod_missing = t("modTrue"), n("modMissing")
    mod_listed, mod_false = t("modListed"), n("modFalse")
    read_true, read_missing = t("readTrue"), n("readMissing")
    mb = sum(r["bytes"] for r in scored) / 1e6
    secs_i, secs_c = t("importSeconds"), t("compactSeconds")
    summary = {
        "transcripts": len(rows), "scored": len(scored),
        "notImportable": len(rows) - len(scored),
        "megabytes": round(mb, 1),
        "importNonZero": sum(1 for r in scored if r.get("importExit")),
        "compactNonZero": sum(1 for r in scored if r.get("compactExit")),
        "skipped": sum(1 for r in scored if r.get("skipped")),
        "filesModifiedRecall": f"{mod_true - mod_missing}/{mod_true}",
        "filesModifiedPrecision": f"{mod_listed - mod_false}/{mod_listed}",
        "filesReadRecall": f"{read_true - read_missing}/{read_true}",
        "falsePassed": n("falsePassed"), "falseFailed": n("falseFailed"),
        "badGoals": sum(1 for r in scored if r.get("badGoal")),
        "importSecondsPerMB": round(secs_i / mb, 3) if mb else 0,
        "compactSecondsPerMB": round(secs_c / mb, 3) if mb else 0,
        "peakImportRSSMiB": round(max((r.get("importRSS", 0) for r in scored), default=0) / 1024, 1),
        "peakCompactRSSMiB": round(max((r.get("compactRSS", 0) for r in scored), default=0) / 1024, 1),
    }
    summary["bySize"] = by_size(scored)
    print(json.dumps(summary, indent=1))
    if out:
        with open(out, "w") as fh:
            json.dump({"summary": summary, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
