#!/usr/bin/env bash
# Installs code-server 4.100.3 (VS Code 1.100.3, the last line that runs on
# Node 20) into DEST from the npm registry and Debian packages only: its
# postinstall would download ripgrep from outside, so lifecycle scripts are
# skipped, ripgrep comes from Debian and the native modules are rebuilt with
# node-gyp against /usr/include/node. Usage: install-code-server.sh DEST
set -euo pipefail
DEST=${1:?dest dir}
V=${CODE_SERVER_VERSION:-4.100.3}
export DEBIAN_FRONTEND=noninteractive npm_config_nodedir=${npm_config_nodedir:-/usr} npm_config_yes=true
if ! command -v rg >/dev/null || ! dpkg -s libkrb5-dev pkg-config build-essential python3 >/dev/null 2>&1; then
  apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
  apt-get -o DPkg::Lock::Timeout=600 install -y -q build-essential python3 pkg-config libkrb5-dev ripgrep >/dev/null
fi
mkdir -p "$DEST" && cd "$DEST"
[ -f package.json ] || echo '{"name":"cs-host","version":"1.0.0","private":true}' >package.json
# 1. code-server itself, without lifecycle scripts.
npm install --no-audit --no-fund --ignore-scripts "code-server@$V"
npm rebuild argon2
VS=node_modules/code-server/lib/vscode
# 2. VS Code server dependencies (pinned by its npm-shrinkwrap.json), again without scripts.
(cd $VS && npm install --omit=dev --no-audit --no-fund --ignore-scripts)
# 3. ripgrep from Debian instead of @vscode/ripgrep's download.
mkdir -p $VS/node_modules/@vscode/ripgrep/bin && cp "$(command -v rg)" $VS/node_modules/@vscode/ripgrep/bin/rg
# 4. Native modules with node-gyp (~45 s on 2 cores).
(cd $VS && npm rebuild kerberos native-watchdog node-pty @vscode/deviceid @vscode/spdlog @parcel/watcher)
# 5. The rest of code-server's postinstall.sh.
(cd $VS && ln -sfn node_modules node_modules.asar &&
  ln -sfn code-linux.sh bin/remote-cli/code-server && ln -sfn browser-linux.sh bin/helpers/browser.sh)
(cd $VS/extensions && npm install --omit=dev --no-audit --no-fund)
node -e 'for (const m of ["node-pty","@vscode/spdlog","native-watchdog","@parcel/watcher","@vscode/ripgrep"]) require(require.resolve(m,{paths:[process.argv[1]]}))' "$PWD/$VS"
"$DEST/node_modules/.bin/code-server" --version
