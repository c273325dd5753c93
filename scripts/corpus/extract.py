#!/usr/bin/env python3
"""Extract the usable half of the entireio/cli checkpoint transcripts.

Reads every full.jsonl blob of the branch entire/checkpoints/v1 of a clone of
github.com/entireio/cli (MIT) and writes those whose SHA-256 (of the content)
starts with 0-7 to OUT/<sha256>.jsonl. Files whose hash starts with 8-f are
kept aside for an independent check: their content is hashed and dropped,
never written or inspected.

usage: extract.py REPO_GIT_DIR OUT_DIR
"""
import hashlib
import os
import subprocess
import sys

BRANCH = "entire/checkpoints/v1"


def main():
    repo, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    tree = subprocess.run(["git", "-C", repo, "ls-tree", "-r", BRANCH],
                          check=True, capture_output=True, text=True).stdout
    blobs = []
    for line in tree.splitlines():
        meta, path = line.split("\t", 1)
        if path.endswith("/full.jsonl"):
            blobs.append((path, meta.split()[2]))
    # One git process streams every blob (cat-file --batch).
    p = subprocess.Popen(["git", "-C", repo, "cat-file", "--batch"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    kept = aside = missing = 0
    index = []
    for path, blob in blobs:
        p.stdin.write((blob + "\n").encode())
        p.stdin.flush()
        header = p.stdout.readline().split()
        if header[-1] == b"missing":
            # The mirror may leave the largest blobs out.
            missing += 1
            continue
        size = int(header[2])
        data = p.stdout.read(size)
        p.stdout.read(1)  # the newline after the content
        digest = hashlib.sha256(data).hexdigest()
        if digest[0] not in "01234567":
            aside += 1
            continue
        kept += 1
        dst = os.path.join(out, digest + ".jsonl")
        if not os.path.exists(dst):
            with open(dst, "wb") as f:
                f.write(data)
        index.append((digest, path, blob, size))
    p.stdin.close()
    p.wait()
    with open(os.path.join(out, "INDEX.tsv"), "w") as f:
        f.write("sha256\tpath\tblob\tbytes\n")
        for row in sorted(index):
            f.write("\t".join(map(str, row)) + "\n")
    print(f"{kept} transcripts kept (sha256 0-7), {aside} kept aside (8-f), "
          f"{missing} absent from the clone, in {out}")


if __name__ == "__main__":
    main()
