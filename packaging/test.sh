#!/usr/bin/env bash
# The one-command installs, built and tried here as a user would, with
# nothing published and no network for the binary:
# - the npm package `soba-lsp` and this platform's `@soba-lsp/<os>-<cpu>`
#   packed, installed from the tarballs into an empty folder with the
#   registry unreachable, then `npx soba-lsp --version` and `npx soba-lsp acp`
#   answering initialize;
# - GoReleaser's release (.goreleaser.yaml) from a tag, publishing skipped:
#   the six archives agent.json names, their checksums, the binary of this
#   platform running;
# - the .vsix of this platform (packaging/vsix.sh) carrying its soba-lsp,
#   which runs;
# - the ACP registry's agent.json against the registry's rules, its versions
#   and archive names matching the npm package and the release.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/.."
export GOFLAGS=${GOFLAGS:--mod=mod}
work=$(mktemp -d "${TMPDIR:-/tmp}/soba-packaging.XXXXXX")
trap 'rm -rf "$work"' EXIT
version=$(node -p 'require("./packaging/acp-registry/agent.json").version')

echo "== npm: build and pack soba-lsp $version for this platform"
packaging/npm/build.sh --version "$version" --targets host --out "$work/npm" >/dev/null
host=$(node -p 'process.platform + "-" + process.arch')
main_tgz="$work/npm/soba-lsp-$version.tgz"
plat_tgz="$work/npm/soba-lsp-$host-$version.tgz"
test -f "$main_tgz" && test -f "$plat_tgz"

echo "== npm: install from the tarballs, registry unreachable"
app="$work/empty-project"
mkdir -p "$app"
cd "$app"
npm init -y >/dev/null
npm_config_registry=http://127.0.0.1:9/ npm install --offline --no-audit --no-fund --loglevel=error \
  "$main_tgz" "$plat_tgz" >/dev/null
got=$(npm_config_registry=http://127.0.0.1:9/ npx --offline soba-lsp --version)
[ "$got" = "soba-lsp v$version" ] || { echo "npx soba-lsp --version printed: $got"; exit 1; }
echo "npx soba-lsp --version: $got"
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}'
answer=$( (printf '%s\n' "$init"; sleep 1) | npm_config_registry=http://127.0.0.1:9/ npx --offline soba-lsp acp 2>/dev/null | head -1)
node -e '
  const a = JSON.parse(process.argv[1]);
  if (a.id !== 1 || a.result?.protocolVersion !== 1 || a.result?.agentInfo?.name !== "soba-lsp" || a.result?.agentInfo?.version !== "v" + process.argv[2]) {
    console.error("npx soba-lsp acp answered initialize with", process.argv[1]); process.exit(1);
  }
  console.log("npx soba-lsp acp: initialize answered by", a.result.agentInfo.name, a.result.agentInfo.version);
' "$answer" "$version"
cd "$here/.."

echo "== release: GoReleaser's release from a tag, every platform"
gr=$(packaging/goreleaser.sh)
"$gr" check >"$work/check.log" 2>&1 || { cat "$work/check.log"; echo "goreleaser check failed"; exit 1; }
# As a release starts: a clone of this commit tagged v$version (the
# version agent.json and the npm package carry), released with this
# checkout's .goreleaser.yaml, its output in $work/release. GoReleaser's
# own checks of the git state run (a clean clone, the tag on HEAD);
# publishing is skipped, so nothing leaves this machine.
git clone --quiet . "$work/release-src"
git -C "$work/release-src" tag -f "v$version" >/dev/null
{ cat .goreleaser.yaml; printf 'dist: %s\n' "$work/release"; } >"$work/goreleaser.yaml"
if ! (cd "$work/release-src" && env -u GITHUB_TOKEN -u GITLAB_TOKEN -u GITEA_TOKEN "$gr" release --clean \
  --config "$work/goreleaser.yaml" --skip=publish,announce,sign,sbom) >"$work/release.log" 2>&1; then
  cat "$work/release.log"; echo "goreleaser release failed"; exit 1
fi
python3 - "$work/release" <<'PY'
import hashlib, os, sys
dist = sys.argv[1]
lines = [l.split() for l in open(os.path.join(dist, "checksums.txt")) if l.strip()]
if len(lines) != 6:
    sys.exit(f"checksums.txt lists {len(lines)} files, want the 6 archives")
for want, name in lines:
    got = hashlib.sha256(open(os.path.join(dist, name), "rb").read()).hexdigest()
    if got != want:
        sys.exit(f"checksums.txt: {name} is {got}, the file says {want}")
print("checksums.txt: " + ", ".join(n for _, n in lines) + " verified")
PY
goos=$(go env GOHOSTOS) goarch=$(go env GOHOSTARCH) ext=tar.gz
[ "$goos" = windows ] && ext=zip
archive="$work/release/soba-lsp_${version}_${goos}_${goarch}.$ext"
[ -f "$archive" ] || { ls "$work/release"; echo "the release did not make $archive"; exit 1; }
mkdir -p "$work/release-unpacked"
if [ "$ext" = zip ]; then unzip -q "$archive" -d "$work/release-unpacked"; else tar -xzf "$archive" -C "$work/release-unpacked"; fi
got=$("$work/release-unpacked/soba-lsp" --version)
[ "$got" = "soba-lsp v$version" ] || { echo "the released soba-lsp --version printed: $got"; exit 1; }
echo "$(basename "$archive"): $got"

echo "== VS Code: the .vsix of this platform carries its server"
vsix=$(packaging/vsix.sh --targets host --out "$work/vsix" | tail -1)
python3 - "$vsix" "$work/vsix-bin" <<'PY'
import os, stat, sys, zipfile
vsix, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(vsix) as z:
    names = z.namelist()
    for want in ("extension/package.json", "extension/dist/extension.js"):
        if want not in names:
            sys.exit(f"{vsix} lacks {want}")
    exe = [n for n in names if n in ("extension/bin/soba-lsp", "extension/bin/soba-lsp.exe")]
    if len(exe) != 1:
        sys.exit(f"{vsix} carries no bin/soba-lsp: {[n for n in names if '/bin/' in n]}")
    os.makedirs(dest, exist_ok=True)
    path = z.extract(exe[0], dest)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    print(path)
PY
"$work/vsix-bin/extension/bin/soba-lsp" --version

echo "== ACP registry: agent.json and icon"
node "$here/acp-registry/check.mjs" "$here/acp-registry" "$here/../.goreleaser.yaml" "$work/release"
echo "packaging: all checks passed"
