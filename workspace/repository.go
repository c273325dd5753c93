package workspace

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/soba-agent/soba-lsp/configschema"
)

// The repository is not the user (SPEC R-W5). Configuration layers are
// owned by one or the other:
//
//   - the user's: the built-in defaults, ~/.config/soba/config.json, the
//     editor's initializationOptions and didChangeConfiguration settings.soba,
//     what an ACP client passes;
//   - the repository's: <workspace>/.soba/config.json and the editor's
//     repositorySettings (the soba settings that came from the workspace's
//     or a folder's own settings, such as .vscode/settings.json).
//
// Until the user trusts the workspace, a repository layer may only tighten:
// RepositoryFilter drops every key configschema does not let a repository
// set, and the loader reports them in one warning (IgnoredWarning).

// layerSource is one configuration layer as LoadConfig merges it.
type layerSource struct {
	name string
	obj  map[string]any
	// repository marks a repository-owned layer; trusted, one the user
	// trusts (it applies in full, but for the user's own keys).
	repository, trusted bool
}

// IgnoredKey is one key of a repository layer that was not applied.
type IgnoredKey struct {
	Layer, Key string
	// Trusted is set for a user-owned key (configschema.RepoNever) that a
	// trusted workspace's layer named: ignored however trusted.
	Trusted bool
}

// editorKeys takes the editor's own keys out of the initializationOptions
// and didChangeConfiguration layers: whether the editor trusts the
// workspace, and the repository's editor settings with the name of the
// layer they came from. The latest layer that has a key decides, so an
// editor that sends its whole settings at each change can also take a
// repository setting back.
func editorKeys(initObj, didObj map[string]any) (trusted bool, repo map[string]any, repoName string, errs []error) {
	for _, l := range []struct {
		name string
		obj  map[string]any
	}{{LayerInitOptions, initObj}, {LayerDidChange, didObj}} {
		if l.obj == nil {
			continue
		}
		if v, ok := l.obj[keyWorkspaceTrusted]; ok {
			delete(l.obj, keyWorkspaceTrusted)
			switch v := v.(type) {
			case bool:
				trusted = v
			case nil:
				trusted = false
			default:
				errs = append(errs, &ConfigError{Layer: l.name, Key: keyWorkspaceTrusted, Problem: "want true or false, got " + configschema.JSONType(v)})
			}
		}
		if v, ok := l.obj[keyRepositorySettings]; ok {
			delete(l.obj, keyRepositorySettings)
			repoName = l.name + " " + keyRepositorySettings
			switch v := v.(type) {
			case map[string]any:
				repo = v
			case nil:
				repo = nil
			default:
				errs = append(errs, &ConfigError{Layer: l.name, Key: keyRepositorySettings, Problem: "want an object of soba settings, got " + configschema.JSONType(v)})
			}
		}
	}
	return trusted, repo, repoName, errs
}

// editorKeysInFile refuses the editor's keys in the user's file and takes
// them out: trust is said by the editor or by `soba-lsp trust`, never by
// a file that would then trust every workspace.
func editorKeysInFile(layer string, obj map[string]any) (errs []error) {
	for _, k := range []string{keyWorkspaceTrusted, keyRepositorySettings} {
		if _, ok := obj[k]; ok {
			delete(obj, k)
			errs = append(errs, &ConfigError{Layer: layer, Key: k, Problem: "only the editor sends it (initializationOptions, didChangeConfiguration); trust a workspace in the editor or with `soba-lsp trust DIR`"})
		}
	}
	return errs
}

// RepositoryFilter removes from a repository layer's object every key that
// may not apply, and returns their dotted paths, sorted. below is the
// configuration merged from the layers before it (without the defaults),
// against which a limit may only be lowered. A trusted layer applies in
// full but for the user's own keys (configschema.RepoNever).
//
// Keys the description does not know are left for the loader to report. A
// null (back to the default) is allowed only where every key it would reset
// is one the repository may set freely: a default is not a tightening.
func RepositoryFilter(obj map[string]any, below map[string]any, trusted bool) []string {
	var ignored []string
	filterRepository(obj, "", configschema.Root(), below, trusted, &ignored)
	slices.Sort(ignored)
	return ignored
}

func filterRepository(obj map[string]any, prefix string, n *configschema.Node, below map[string]any, trusted bool, ignored *[]string) {
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		v, path := obj[k], join(prefix, k)
		c := n.Elem
		if n.Type != configschema.Map {
			c = n.Children[k]
		}
		if c == nil {
			continue // unknown: checkObject names it
		}
		drop := func() {
			delete(obj, k)
			*ignored = append(*ignored, path)
		}
		if trusted {
			sub, isObj := v.(map[string]any)
			switch {
			case c.Repository == configschema.RepoNever:
				drop()
			case isObj && (c.Type == configschema.Object || c.Type == configschema.Map):
				subBelow, _ := below[k].(map[string]any)
				filterRepository(sub, path, c, subBelow, trusted, ignored)
			}
			continue
		}
		var under any
		if below != nil {
			under = below[k]
		}
		switch c.Repository {
		case configschema.RepoApplies:
			sub, isObj := v.(map[string]any)
			switch {
			case v == nil && !appliesWhole(c):
				drop()
			case c.Named != "" && !isObj:
				// A pick among the user's models by name: another
				// model can cost far more, like model.name.
				drop()
			case isObj && (c.Type == configschema.Object || c.Type == configschema.Map):
				subBelow, _ := under.(map[string]any)
				filterRepository(sub, path, c, subBelow, trusted, ignored)
			}
		case configschema.RepoLowerOnly:
			now, ok := number(under)
			if !ok {
				now, ok = number(c.Default)
			}
			if v == nil {
				drop()
			} else if x, isNum := number(v); isNum && ok && x > now {
				drop()
			}
		case configschema.RepoTighten:
			if v != c.Tighter {
				drop()
			}
		default: // RepoIgnored, RepoNever
			drop()
		}
	}
}

// appliesWhole reports whether a repository may set every key at and below
// n freely, so a null there resets nothing it could not set itself.
func appliesWhole(n *configschema.Node) bool {
	if n.Repository != configschema.RepoApplies {
		return false
	}
	if n.Elem != nil && !appliesWhole(n.Elem) {
		return false
	}
	for _, c := range n.Children {
		if !appliesWhole(c) {
			return false
		}
	}
	return true
}

// number reads a JSON number as the loader holds it (json.Number before
// checking, int64 after, int or float64 for a default).
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

// IgnoredWarning is the one warning about ignored repository keys: which
// keys, from which layer, and how to trust the workspace.
func IgnoredWarning(root string, ignored []IgnoredKey) string {
	byLayer := func(keys []IgnoredKey, trusted bool) []string {
		var parts []string
		var layers []string
		keysOf := map[string][]string{}
		for _, k := range keys {
			if k.Trusted != trusted {
				continue
			}
			if _, seen := keysOf[k.Layer]; !seen {
				layers = append(layers, k.Layer)
			}
			keysOf[k.Layer] = append(keysOf[k.Layer], k.Key)
		}
		for _, l := range layers {
			parts = append(parts, strings.Join(keysOf[l], ", ")+" (in "+l+")")
		}
		return parts
	}
	untrusted, never := byLayer(ignored, false), byLayer(ignored, true)
	var msg []string
	if len(untrusted) > 0 {
		how := "trust the workspace in your editor"
		if root != "" {
			how = fmt.Sprintf("run `soba-lsp trust %s` (valid until the file changes) or %s", root, how)
		}
		msg = append(msg, fmt.Sprintf("soba: this workspace is not trusted, so its repository's settings %s are ignored: "+
			"until you trust it, a repository may only tighten, never choose a model endpoint, key or provider, start a program or relax an approval (SPEC R-W5). "+
			"To apply them, %s.", strings.Join(untrusted, "; "), how))
	}
	if len(never) > 0 {
		msg = append(msg, fmt.Sprintf("soba: %s ignored: only your own configuration (~/.config/soba/config.json, the editor's user settings) sets these, trusted workspace or not.",
			strings.Join(never, "; ")))
	}
	return strings.Join(msg, " ")
}
