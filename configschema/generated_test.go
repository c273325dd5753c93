package configschema

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the files generated from the description")

// checkGenerated compares a generated file of the repository with what the
// description makes of it; with -update it writes it.
func checkGenerated(t *testing.T, file string, gen func(old []byte) ([]byte, error)) {
	t.Helper()
	path := filepath.Join("..", filepath.FromSlash(file))
	old, err := os.ReadFile(path)
	if err != nil && !(*update && os.IsNotExist(err)) {
		t.Fatal(err)
	}
	got, err := gen(old)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(old, got) {
		return
	}
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: rewritten from the description", file)
		return
	}
	t.Errorf("%s differs from configschema's description; edit configschema/schema.go, then run\n\tgo test ./configschema -args -update\nand commit the result. Generated:\n%s", file, got)
}

// TestGeneratedConfigurationDoc: the key reference of docs/configuration.md
// is the description's.
func TestGeneratedConfigurationDoc(t *testing.T) {
	checkGenerated(t, DocFile, SpliceMarkdown)
}

// TestGeneratedPackageJSON: the VS Code settings (contributes.configuration)
// are the description's; the rest of package.json is left as it is.
func TestGeneratedPackageJSON(t *testing.T) {
	checkGenerated(t, PackageJSONFile, SpliceConfiguration)
}

// TestGeneratedSettingsTS: the extension's list of server keys is the
// description's.
func TestGeneratedSettingsTS(t *testing.T) {
	checkGenerated(t, SettingsTSFile, func([]byte) ([]byte, error) { return []byte(SettingsTS()), nil })
}

// TestGeneratedVSCodeReadme: the extension's README lists the description's
// settings and defaults.
func TestGeneratedVSCodeReadme(t *testing.T) {
	checkGenerated(t, VSCodeReadmeFile, SpliceVSCodeReadme)
}

// TestGeneratedSecurityKeyTable_RW5: the key table of docs/security.md
// (what a repository of an untrusted workspace may set) is the
// description's.
func TestGeneratedSecurityKeyTable_RW5(t *testing.T) {
	checkGenerated(t, SecurityFile, SpliceSecurity)
}
