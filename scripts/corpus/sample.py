#!/usr/bin/env python3
"""Write the committed sample of the corpus: testdata/corpus/entireio-cli/.

From the directory extract.py wrote (the 0-7 half only), takes the Claude
Code transcripts in order of their SHA-256 name, each under 600 kB, until
the sample would pass 12 MB; writes each as <sha256[:16]>.jsonl with its
facts from truth.py as <sha256[:16]>.truth.json, and PROVENANCE.tsv naming
where each came from. Deterministic: the same corpus gives the same sample.

usage: sample.py CORPUS_DIR OUT_DIR
"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import truth  # noqa: E402

MAX_FILE = 600_000
MAX_TOTAL = 12_000_000


def main():
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    index = {}
    with open(os.path.join(src, "INDEX.tsv")) as f:
        next(f)
        for line in f:
            sha, path, blob, size = line.rstrip("\n").split("\t")
            index.setdefault(sha, (path, blob))
    total = 0
    rows = []
    for sha in sorted(index):
        p = os.path.join(src, sha + ".jsonl")
        size = os.path.getsize(p)
        with open(p, "rb") as f:
            if b'"projectHash"' in f.read(300):
                continue  # a Gemini CLI session, not imported
        if size > MAX_FILE or total + size > MAX_TOTAL:
            continue
        total += size
        name = sha[:16]
        shutil.copyfile(p, os.path.join(out, name + ".jsonl"))
        with open(os.path.join(out, name + ".truth.json"), "w") as f:
            json.dump(truth.facts(p), f, indent=1)
            f.write("\n")
        rows.append((name, sha) + index[sha])
    with open(os.path.join(out, "PROVENANCE.tsv"), "w") as f:
        f.write("file\tsha256\tpath on branch entire/checkpoints/v1\tgit blob\n")
        for r in rows:
            f.write("\t".join(r) + "\n")
    print(f"{len(rows)} transcripts, {total / 1e6:.1f} MB, in {out}")


if __name__ == "__main__":
    main()
