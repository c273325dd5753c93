// Checks packaging/acp-registry against the ACP registry's rules
// (agent.schema.json and CONTRIBUTING.md of the registry: required fields,
// the id's pattern, at least one distribution, the six platform names, an
// archive and cmd per binary, a 16x16 SVG icon drawn with currentColor
// only) and against this repository: the npx package is the npm package at
// the same version, and each archive is the one the release builds. Given
// the output folder of a release (GoReleaser's dist), every archive in it
// must be one agent.json points to, and listed in its checksums.txt.
//
//   node check.mjs ACP_REGISTRY_DIR GORELEASER_YAML [RELEASE_DIST]
import fs from 'node:fs';
import path from 'node:path';

const [dir, goreleaser, releaseDist] = process.argv.slice(2);
const agent = JSON.parse(fs.readFileSync(path.join(dir, 'agent.json'), 'utf8'));
const problems = [];
const need = (ok, what) => { if (!ok) problems.push(what); };

for (const k of ['id', 'name', 'version', 'description', 'distribution']) need(agent[k], `agent.json lacks ${k}`);
need(/^[a-z][a-z0-9-]*$/.test(agent.id), `id ${agent.id} is not lowercase with hyphens`);
need(/^[0-9]+\.[0-9]+\.[0-9]+/.test(agent.version), `version ${agent.version} is not semantic`);
const known = new Set(['id', 'name', 'version', 'description', 'repository', 'authors', 'license', 'icon', 'distribution']);
for (const k of Object.keys(agent)) need(known.has(k), `agent.json has an unknown field ${k}`);
const dist = agent.distribution ?? {};
need(Object.keys(dist).length >= 1, 'no distribution');
for (const k of Object.keys(dist)) need(['binary', 'npx', 'uvx'].includes(k), `unknown distribution ${k}`);

const npmPkg = JSON.parse(fs.readFileSync(path.join(dir, '../npm/soba-lsp/package.json'), 'utf8'));
need(dist.npx?.package === `${npmPkg.name}@${agent.version}`, `npx package ${dist.npx?.package} is not ${npmPkg.name}@${agent.version}`);
need(JSON.stringify(dist.npx?.args) === '["acp"]', 'npx args are not ["acp"]');

const platforms = { 'darwin-aarch64': ['darwin', 'arm64'], 'darwin-x86_64': ['darwin', 'amd64'], 'linux-aarch64': ['linux', 'arm64'],
  'linux-x86_64': ['linux', 'amd64'], 'windows-aarch64': ['windows', 'arm64'], 'windows-x86_64': ['windows', 'amd64'] };
const release = fs.readFileSync(goreleaser, 'utf8');
need(release.includes('name_template: "{{ .ProjectName }}_{{ .Version }}_{{ .Os }}_{{ .Arch }}"'), 'the release archives are not named as agent.json expects');
for (const [name, t] of Object.entries(dist.binary ?? {})) {
  need(platforms[name], `unknown platform ${name}`);
  if (!platforms[name]) continue;
  const [os, arch] = platforms[name];
  const ext = os === 'windows' ? 'zip' : 'tar.gz';
  const want = `https://github.com/soba-agent/soba-lsp/releases/download/v${agent.version}/soba-lsp_${agent.version}_${os}_${arch}.${ext}`;
  need(t.archive === want, `${name}: archive ${t.archive}, the release makes ${want}`);
  need(t.cmd === (os === 'windows' ? './soba-lsp.exe' : './soba-lsp'), `${name}: cmd ${t.cmd}`);
  need(JSON.stringify(t.args) === '["acp"]', `${name}: args are not ["acp"]`);
  for (const k of Object.keys(t)) need(['archive', 'cmd', 'args', 'env'].includes(k), `${name}: unknown field ${k}`);
}
need(Object.keys(dist.binary ?? {}).length === 6, 'not every platform has a binary');

const released = [];
if (releaseDist) {
  const names = new Set(Object.values(dist.binary ?? {}).map((t) => path.basename(t.archive ?? '')));
  const sums = fs.readFileSync(path.join(releaseDist, 'checksums.txt'), 'utf8').split('\n').map((l) => l.trim().split(/\s+/)[1]).filter(Boolean);
  for (const f of fs.readdirSync(releaseDist).filter((f) => /^soba-lsp_.*\.(tar\.gz|zip)$/.test(f))) {
    released.push(f);
    need(names.has(f), `the release made ${f}, which agent.json does not point to`);
    need(sums.includes(f), `checksums.txt does not list ${f}`);
  }
  for (const n of names) need(released.includes(n), `agent.json points to ${n}, which the release did not make`);
}

const icon = fs.readFileSync(path.join(dir, agent.icon ?? 'icon.svg'), 'utf8');
need(/<svg[^>]*width="16"[^>]*height="16"/.test(icon), 'the icon is not a 16x16 SVG');
for (const m of icon.matchAll(/(fill|stroke)="([^"]*)"/g)) {
  need(m[2] === 'currentColor' || m[2] === 'none', `the icon hard-codes ${m[1]}="${m[2]}"`);
}

if (problems.length) {
  console.error(problems.join('\n'));
  process.exit(1);
}
console.log(`agent.json ${agent.id} ${agent.version}: ${Object.keys(dist.binary).length} binaries, npx ${dist.npx.package}, icon ok` +
  (released.length ? `; the release's ${released.join(', ')} among them` : ''));
