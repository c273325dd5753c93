// Package architecture holds no code: its tests keep docs/architecture.md
// true to the tree. They read the import graph with `go list`, check it
// against the layering of DESIGN.md (TestLayering), and regenerate the
// package graph and the map of where each SPEC rule is cited
// (TestArchitectureDoc; `go test ./internal/architecture/ -update` rewrites
// the generated blocks).
package architecture
