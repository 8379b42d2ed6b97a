package schemas_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// envBlocks reads env.go's const blocks in order: for each, the AGORA_*
// names its constants hold. Parsing the source (not a hand-kept list) is
// what lets the test notice a constant added without its documentation.
func envBlocks(t *testing.T) [][]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "env.go", nil, 0)
	if err != nil {
		t.Fatalf("parse env.go: %v", err)
	}
	var blocks [][]string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		var names []string
		for _, spec := range gd.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("env.go: a constant that is not a string literal: %#v", v)
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, s)
			}
		}
		blocks = append(blocks, names)
	}
	return blocks
}

// contractTable returns the AGORA_* names in the first column of the
// first table after the line that starts with heading in
// docs/contract.md. AGORA_SECRET_<20 hex> is read as its prefix.
func contractTable(t *testing.T, heading string) []string {
	t.Helper()
	doc, err := os.ReadFile("../docs/contract.md")
	if err != nil {
		t.Fatalf("read the contract: %v", err)
	}
	_, rest, ok := strings.Cut(string(doc), "\n"+heading)
	if !ok {
		t.Fatalf("docs/contract.md has no %q", heading)
	}
	name := regexp.MustCompile("`(AGORA_[A-Z0-9_]*)(<[^>]*>)?`")
	var names []string
	inTable := false
	for line := range strings.SplitSeq(rest, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		for _, m := range name.FindAllStringSubmatch(first, -1) {
			names = append(names, m[1])
		}
	}
	if len(names) == 0 {
		t.Fatalf("docs/contract.md: no AGORA_* names in the table after %q", heading)
	}
	return names
}

func TestEnvNamesMatchContract(t *testing.T) {
	t.Parallel()
	blocks := envBlocks(t)
	if len(blocks) != 3 {
		t.Fatalf("env.go has %d const blocks; want 3 (worker, egress proxy, runtime)", len(blocks))
	}
	worker, egress, runtime := blocks[0], blocks[1], blocks[2]
	// The proxy and the runtime also see worker names they share.
	egress = append(egress, "AGORA_DISPATCH_ID")
	runtime = append(runtime, "AGORA_DISPATCH_ID", "AGORA_WORKSPACE")
	for _, tt := range []struct {
		what, heading string
		consts        []string
	}{
		{"the worker's environment", "## Worker environment", worker},
		{"the egress proxy's environment", "`agora-worker egress-proxy`", egress},
		{"the runtime's environment", "### What the runtime sees", runtime},
	} {
		documented := contractTable(t, tt.heading)
		for _, n := range tt.consts {
			if !slices.Contains(documented, n) {
				t.Errorf("%s: schemas defines %s but docs/contract.md's table after %q does not list it", tt.what, n, tt.heading)
			}
		}
		for _, n := range documented {
			if !slices.Contains(tt.consts, n) {
				t.Errorf("%s: docs/contract.md lists %s but schemas/env.go defines no constant for it", tt.what, n)
			}
		}
	}
}
