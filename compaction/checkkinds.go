package compaction

import (
	"path"
	"strings"
)

// classify says whether a command (wrappers and directory options removed)
// verifies the work or is consequential (R-C5). It looks at the command's
// words only, so a check named inside a quoted message is never one.
func classify(words []string) cmdKind {
	if len(words) == 0 {
		return kindNone
	}
	name := path.Base(words[0])
	args := words[1:]
	sub := firstArg(args)
	switch name {
	case "go":
		switch sub {
		case "test", "vet", "build":
			return kindCheck
		}
	case "gofmt":
		if hasAny(args, "-l", "-d") {
			return kindCheck
		}
	case "golangci-lint", "staticcheck", "govulncheck", "tsc", "vue-tsc", "vitest", "jest", "mocha", "eslint", "ava",
		"pytest", "py.test", "mypy", "pyright", "tox", "nox", "rspec", "ctest", "phpunit", "shellcheck", "hadolint", "stylelint",
		"flake8", "pylint", "basedpyright":
		if hasAny(args, "--version", "--help", "--init", "-v") && len(args) == 1 {
			return kindNone
		}
		if name == "vitest" && sub == "watch" {
			return kindNone
		}
		return kindCheck
	case "playwright":
		if sub == "test" {
			return kindCheck
		}
	case "biome":
		switch sub {
		case "check", "lint", "ci", "format":
			if sub != "format" || !hasAny(args, "--write") {
				return kindCheck
			}
		}
	case "prettier", "black", "isort":
		if hasAny(args, "--check", "-c", "--list-different", "-l", "--diff") {
			return kindCheck
		}
	case "ruff":
		if sub == "check" || sub == "format" && hasAny(args, "--check", "--diff") {
			return kindCheck
		}
	case "python", "python3":
		if len(args) >= 2 && args[0] == "-m" {
			switch args[1] {
			case "pytest", "unittest", "mypy", "tox", "pyright", "ruff", "flake8", "pylint", "compileall":
				return classify(args[1:])
			}
		}
	case "uv", "poetry", "pipenv", "hatch", "pdm":
		if sub == "run" && len(args) > 1 {
			return classify(args[1:])
		}
	case "npx", "bunx", "pnpx":
		return classify(skipFlags(args))
	case "npm", "pnpm", "yarn", "bun":
		return classifyPackageManager(name, args)
	case "turbo", "nx", "lerna", "moon":
		return classifyTaskRunner(args)
	case "mise":
		// `mise run test`, `mise r lint`, `mise run test ::: lint`.
		if (sub == "run" || sub == "r") && len(positional(args)) > 1 {
			return scriptKind(positional(args)[1])
		}
	case "deno":
		switch sub {
		case "test", "check", "lint":
			return kindCheck
		case "fmt":
			if hasAny(args, "--check") {
				return kindCheck
			}
		case "task":
			if len(args) > 1 && isCheckScript(args[1]) {
				return kindCheck
			}
		}
	case "cargo":
		switch sub {
		case "test", "check", "clippy", "build", "nextest":
			return kindCheck
		case "fmt":
			if hasAny(args, "--check") {
				return kindCheck
			}
		case "publish":
			return kindConsequential
		}
	case "make", "gmake", "just", "task", "mage":
		targets := positional(args)
		if len(targets) == 0 && name == "make" {
			return kindCheck // the default target builds
		}
		for _, t := range targets {
			if isCheckScript(t) || t == "all" {
				return kindCheck
			}
			if isConsequentialScript(t) {
				return kindConsequential
			}
		}
	case "mvn", "mvnw", "gradle", "gradlew":
		for _, t := range positional(args) {
			switch strings.TrimPrefix(t, ":") {
			case "test", "verify", "package", "build", "check", "compile", "install", "integrationTest":
				return kindCheck
			case "deploy", "publish":
				return kindConsequential
			}
		}
	case "dotnet", "swift":
		switch sub {
		case "test", "build":
			return kindCheck
		}
	case "zig":
		if sub == "build" || sub == "test" {
			return kindCheck
		}
	case "bazel", "bazelisk":
		if sub == "test" || sub == "build" {
			return kindCheck
		}
	case "mix":
		if sub == "test" || sub == "compile" {
			return kindCheck
		}
	case "bundle":
		if sub == "exec" && len(args) > 1 {
			if args[1] == "rake" {
				return kindCheck
			}
			return classify(args[1:])
		}
	case "rake":
		if sub == "" || sub == "test" || sub == "spec" {
			return kindCheck
		}
	case "docker", "podman":
		switch sub {
		case "build", "buildx":
			return kindCheck
		case "push":
			return kindConsequential
		case "compose":
			if len(args) > 1 && args[1] == "build" {
				return kindCheck
			}
		}
	case "git":
		switch sub {
		case "push", "commit":
			return kindConsequential
		case "merge", "rebase", "cherry-pick":
			if !hasAny(args, "--abort", "--continue", "--skip") {
				return kindConsequential
			}
		}
	case "gh":
		if len(args) >= 2 {
			switch args[0] + " " + args[1] {
			case "pr merge", "pr create", "release create", "workflow run":
				return kindConsequential
			}
		}
	case "twine", "vercel", "netlify", "fly", "flyctl", "wrangler", "firebase", "heroku":
		switch sub {
		case "upload", "deploy", "publish", "--prod":
			return kindConsequential
		}
		if name == "vercel" && (sub == "" || hasAny(args, "--prod")) {
			return kindConsequential
		}
	case "kubectl", "helm":
		switch sub {
		case "apply", "install", "upgrade", "rollout":
			return kindConsequential
		}
	case "terraform", "tofu", "pulumi":
		switch sub {
		case "apply", "up", "destroy":
			return kindConsequential
		case "plan", "validate", "preview":
			return kindCheck
		}
	case "prisma", "alembic", "flyway", "sqlx", "diesel", "knex", "sequelize":
		for _, a := range args {
			if strings.Contains(a, "migrate") || a == "upgrade" || a == "deploy" {
				return kindConsequential
			}
		}
	}
	return kindNone
}

// classifyPackageManager reads `npm test`, `npm run check`, `pnpm --filter
// api test`, `yarn workspace x build`, `bun test`, `npm publish`.
func classifyPackageManager(name string, args []string) cmdKind {
	pos := positional(args)
	if len(pos) == 0 {
		return kindNone
	}
	verb := pos[0]
	switch verb {
	case "workspace":
		// yarn workspace NAME SCRIPT
		if len(pos) >= 3 {
			return classifyPackageManager(name, pos[2:])
		}
		return kindNone
	case "run", "run-script":
		if len(pos) >= 2 {
			return scriptKind(pos[1])
		}
		return kindNone
	case "exec", "dlx", "x":
		return classify(skipFlags(args[indexOf(args, verb)+1:]))
	case "test", "t", "tst":
		return kindCheck
	case "publish", "release", "deploy":
		return kindConsequential
	case "install", "i", "ci", "add", "remove", "rm", "uninstall", "update", "up", "upgrade", "link", "outdated",
		"init", "create", "info", "view", "list", "ls", "why", "audit", "config", "version", "start", "dev", "serve",
		"pack", "cache", "login", "whoami", "help", "exec-env", "env", "dedupe", "prune", "rebuild", "fund", "setup":
		return kindNone
	}
	// `pnpm lint`, `yarn build`, `bun run`-less scripts.
	if name != "npm" {
		return scriptKind(verb)
	}
	return kindNone
}

// classifyTaskRunner reads `turbo run test`, `turbo build`, `nx test app`,
// `nx run app:lint`, `nx run-many -t test`, `moon run app:build`.
func classifyTaskRunner(args []string) cmdKind {
	pos := positional(args)
	for i, p := range pos {
		if p == "run" || p == "run-many" || p == "affected" {
			continue
		}
		if i > 0 && pos[0] != "run" && pos[0] != "run-many" && pos[0] != "affected" {
			break
		}
		if _, task, ok := strings.Cut(p, ":"); ok {
			p = task
		}
		return scriptKind(p)
	}
	for i, a := range args {
		if (a == "-t" || a == "--target" || a == "--targets") && i+1 < len(args) {
			return scriptKind(strings.Split(args[i+1], ",")[0])
		}
		if v, ok := strings.CutPrefix(a, "--target="); ok {
			return scriptKind(v)
		}
	}
	return kindNone
}

// scriptKind is the kind of a package script or task by its name: test,
// check, build, lint, type-check, typecheck (and `test:unit`, `check-types`,
// `lint:ci`), or publish, release, deploy.
func scriptKind(script string) cmdKind {
	switch {
	case isCheckScript(script):
		return kindCheck
	case isConsequentialScript(script):
		return kindConsequential
	}
	return kindNone
}

var checkScripts = map[string]bool{
	"test": true, "tests": true, "check": true, "checks": true, "build": true, "lint": true, "typecheck": true,
	"type-check": true, "types": true, "tsc": true, "verify": true, "e2e": true, "ci": true, "vet": true,
	"validate": true, "compile": true, "spec": true, "unit": true, "coverage": true,
}

func isCheckScript(s string) bool {
	s = strings.ToLower(s)
	if checkScripts[s] {
		return true
	}
	// `test:unit`, `check-types`, `lint:ci`, `type-check:all`,
	// `build:prod`; not `lint:fix` or `format`.
	for _, sep := range []string{":", "-", "_", "."} {
		if head, tail, ok := strings.Cut(s, sep); ok {
			if tail == "fix" || tail == "watch" || tail == "write" {
				return false
			}
			if checkScripts[head] || head == "type" && (tail == "check" || strings.HasPrefix(tail, "check")) {
				return true
			}
		}
	}
	return false
}

func isConsequentialScript(s string) bool {
	s = strings.ToLower(s)
	for _, w := range []string{"publish", "release", "deploy", "migrate"} {
		if s == w || strings.HasPrefix(s, w+":") || strings.HasPrefix(s, w+"-") {
			return true
		}
	}
	return false
}

// positional returns the words that are not options, skipping the values
// of options known to take one (`--filter api`, `-w pkg`).
func positional(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			if !strings.Contains(a, "=") && takesValue[a] && i+1 < len(args) {
				i++
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

// takesValue lists package-manager and task-runner options followed by a
// value.
var takesValue = map[string]bool{
	"--filter": true, "-F": true, "--workspace": true, "-w": true, "--scope": true, "-p": true, "--project": true,
	"-f": true, "--file": true, "--config": true, "-c": true, "--target": true, "-t": true, "--reporter": true,
}

func firstArg(args []string) string {
	if p := positional(args); len(p) > 0 {
		return p[0]
	}
	return ""
}

func skipFlags(args []string) []string {
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			return args[i:]
		}
	}
	return nil
}

func hasAny(args []string, flags ...string) bool {
	for _, a := range args {
		for _, f := range flags {
			if a == f || strings.HasPrefix(a, f+"=") {
				return true
			}
		}
	}
	return false
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}
