package arch_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/agoradev/agora"

// may is the package map of docs/architecture.md: for each package of the
// module (relative to it), the packages of the module it may import. A
// package not listed fails the test until it is placed on the map.
// Test helpers (…test, …fake, internal/testenv, internal/testutil,
// internal/testlog) follow helperRule instead; the composition root and
// the packages under test/ may import anything.
var may = map[string][]string{
	"schemas":             nil,
	"skills":              nil,
	"internal/exit":       nil,
	"internal/fargate":    nil,
	"internal/apitoken":   nil,
	"internal/fsutil":     nil,
	"internal/httplimit":  nil,
	"internal/natsauth":   nil,
	"internal/natsserver": nil,
	"internal/sse":        nil,
	"internal/storage":    nil,
	"internal/units":      nil,
	"internal/hugeheap":   nil,
	// Imported by agora-worker for its init alone (huge pages for the heap).
	"internal/hugeheap/atstart": {"internal/hugeheap"},
	"internal/proc":             {"internal/exit"},
	"internal/compute":          {"internal/exit"},
	// The engines: only internal/compute/docker imports the Docker SDK,
	// only internal/compute/ecs the ECS one (thirdParty below).
	"internal/compute/docker": {"internal/compute", "internal/exit"},
	"internal/compute/ecs":    {"internal/compute", "internal/exit", "internal/fargate"},
	// The measuring engine (docs/capacity.md): the worker as a process,
	// or its recorded run replayed (signed with schemas' event MAC).
	"internal/compute/procbench": {"internal/compute", "internal/exit", "schemas"},
	"internal/bus":               {"schemas"},
	"internal/egress":            {"schemas"},
	"internal/secrets":           {"schemas", "internal/fsutil"},
	"internal/secrets/awssm":     {"internal/secrets"},
	"internal/workspace":         {"schemas", "internal/storage", "internal/units"},
	"adapters":                   {"schemas", "internal/exit"},
	"adapters/exec":              {"adapters", "schemas", "internal/proc"},
	"adapters/claudecode":        {"adapters", "schemas", "internal/proc"},
	"worker/sentinel":            {"schemas", "internal/fsutil"},
	"worker": {"adapters", "schemas", "skills", "worker/sentinel", "internal/bus", "internal/fsutil", "internal/proc",
		"internal/secrets", "internal/secrets/awssm", "internal/storage", "internal/workspace"},
	"cmd/agora-worker": {"adapters", "adapters/exec", "adapters/claudecode", "schemas", "worker", "worker/sentinel",
		"internal/egress", "internal/units", "internal/hugeheap/atstart"},
	"images": {"internal/compute"},
	"runner": {"schemas", "internal/bus", "internal/compute", "internal/egress", "internal/exit", "internal/natsauth",
		"internal/secrets", "internal/secrets/awssm", "internal/storage", "internal/units", "internal/workspace"},
	"wire":                  {"schemas"},
	"client":                {"schemas", "wire"},
	"orchestrator/answer":   {"schemas", "wire", "internal/units"},
	"registryfile":          {"schemas", "wire", "internal/fsutil"},
	"orchestrator/registry": {"schemas", "wire", "internal/bus", "internal/fsutil", "internal/storage"},
	"orchestrator": {"schemas", "wire", "orchestrator/answer", "orchestrator/registry", "internal/bus", "internal/fargate",
		"internal/secrets", "internal/storage", "internal/units"},
	"orchestrator/api": {"schemas", "wire", "orchestrator", "orchestrator/answer", "orchestrator/registry",
		"internal/apitoken", "internal/httplimit", "internal/sse"},
	"orchestrator/web": {"schemas", "wire", "orchestrator", "orchestrator/api", "internal/httplimit", "internal/sse",
		"internal/units"},
	"orchestrator/answer/slackanswer": {"schemas", "wire", "orchestrator", "orchestrator/answer", "internal/bus"},
	// The CLI parses, calls through the client or the composition root,
	// renders.
	// registryfile and internal/apitoken read local files (a registry, a
	// tokens file) in the formats the server reads; cliconfig is the CLI's
	// own config file.
	"cmd/agora/internal/cliconfig": nil,
	// batchreport is batch submit's bookkeeping over the client's lines.
	"cmd/agora/internal/batchreport": {"client", "wire"},
	// exitcode is the CLI's exit codes and the errors that choose them.
	"cmd/agora/internal/exitcode": {"cmd/agora/internal/cliconfig"},
	// notapi names what answered instead of the API (the NATS port, plain
	// HTTP) from a request's error.
	"cmd/agora/internal/notapi": nil,
	// idnames is -o name: the ids in any command's JSON output.
	"cmd/agora/internal/idnames": nil,
	// verbflags is the conventions of every verb's pflag set: spellings,
	// error wording, usage from the definitions.
	"cmd/agora/internal/verbflags": nil,
	// explain is which server the CLI calls and the wording of its errors.
	"cmd/agora/internal/explain": {"client", "wire", "cmd/agora/internal/notapi", "cmd/agora/internal/exitcode",
		"cmd/agora/internal/view"},
	// submitreq is dispatch's submit request, built from flags and files.
	"cmd/agora/internal/submitreq": {"wire", "schemas", "registryfile", "cmd/agora/internal/exitcode"},
	// view is how the CLI writes for people: render functions of wire types.
	"cmd/agora/internal/view": {"client", "wire", "schemas", "cmd/agora/internal/batchreport", "cmd/agora/internal/cliconfig",
		"cmd/agora/internal/exitcode"},
	// progress is work in progress on stderr: dispatch --wait's lines, the
	// batch bar, the bulk counter.
	"cmd/agora/internal/progress": {"client", "wire", "cmd/agora/internal/view", "cmd/agora/internal/batchreport"},
	// roleflags declares the role verbs' flags and fills the root's Config
	// with the lower packages' types and defaults, so the verbs need none.
	"cmd/agora/internal/roleflags": {"cmd/agora/internal/roles", "images", "schemas", "wire", "runner", "orchestrator",
		"orchestrator/answer", "orchestrator/answer/slackanswer", "internal/apitoken", "internal/bus", "internal/compute",
		"internal/compute/ecs", "internal/units"},
	// follow is dispatch --wait: a task followed to its end, its exit.
	"cmd/agora/internal/follow": {"client", "wire", "cmd/agora/internal/exitcode", "cmd/agora/internal/explain",
		"cmd/agora/internal/progress", "cmd/agora/internal/view"},
	// demo is agora demo's script, on the stack the root starts.
	"cmd/agora/internal/demo": {"cmd/agora/internal/roles", "client", "wire", "schemas", "cmd/agora/internal/exitcode",
		"cmd/agora/internal/view"},
	"cmd/agora": {"client", "wire", "schemas", "registryfile", "internal/apitoken", "cmd/agora/internal/cliconfig",
		"cmd/agora/internal/roles", "cmd/agora/internal/roleflags"},
}

// cmdAllowed are edges of cmd/agora that break its rule, allowed while a
// change moves them out. Issue 22 emptied it (images, internal/natsauth and
// internal/secrets now go through cmd/agora/internal/roles); keep it empty.
// An entry whose edge is gone fails the test, so it cannot go stale.
var cmdAllowed = []string{}

// root may import anything: it wires every role.
const root = "cmd/agora/internal/roles"

// thirdParty lists, per third-party module path prefix, the only packages
// of this module that may import it directly.
var thirdParty = map[string][]string{
	"github.com/docker/docker":                            {"internal/compute/docker"},
	"github.com/nats-io/nats-server/v2":                   {"internal/natsserver"},
	"github.com/aws/aws-sdk-go-v2/service/ecs":            {"internal/compute/ecs", "internal/compute/ecs/ecsfake"},
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs": {"internal/compute/ecs"},
	"github.com/aws/aws-sdk-go-v2/service/s3":             {"internal/storage"},
	"github.com/slack-go/slack":                           {"orchestrator/answer/slackanswer"},
	"github.com/tsenart/vegeta":                           {"test/apiload"},
	"github.com/go-json-experiment/json":                  {"orchestrator"},
}

// workerMustNotLink are what the static worker binary never links: the
// server side of agora and the SDKs it needs.
var workerMustNotLink = []string{
	module + "/orchestrator", module + "/runner", module + "/images", module + "/wire", module + "/client",
	module + "/cmd/agora/", module + "/internal/compute", module + "/internal/natsserver",
	"github.com/nats-io/nats-server", "github.com/docker/", "github.com/aws/aws-sdk-go-v2/service/ecs",
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs", "github.com/slack-go/", "github.com/getkin/",
	"github.com/prometheus/", "github.com/spf13/cobra", "github.com/gorilla/websocket", "github.com/chromedp/",
}

type pkg struct {
	ImportPath string
	Name       string
	Imports    []string
	Deps       []string
	Standard   bool
}

// list runs go list on the whole module, once for all the tests.
func list(t *testing.T) map[string]*pkg {
	t.Helper()
	pkgs, err := listed()
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

var listed = sync.OnceValues(func() (map[string]*pkg, error) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Name,Imports,Deps,Standard", "./...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list ./...: %v\n%s", err, stderr.Bytes())
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("read go list's output: %w", err)
		}
		pkgs[rel(p.ImportPath)] = &p
	}
})

// rel is path relative to the module, or "" outside it.
func rel(path string) string {
	if path == module {
		return "."
	}
	r, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return ""
	}
	return r
}

// isHelper reports whether p is a test helper or lies under one (a
// stand-in's command, fakeclaude/cmd/claude).
func isHelper(p string) bool {
	if p == "internal/testutil" || p == "internal/testlog" {
		return true
	}
	for _, seg := range strings.Split(p, "/") {
		if strings.HasSuffix(seg, "test") || strings.HasSuffix(seg, "fake") || strings.HasPrefix(seg, "fake") {
			return true
		}
	}
	return false
}

func isStd(path string) bool { return !strings.Contains(strings.SplitN(path, "/", 2)[0], ".") }

// helperRule: a test helper under parent P may import P's subtree, what P
// may import (and beneath it), other helpers and packages that import
// nothing of the module — never a package above P. Helpers outside any
// package (internal/testenv, testutil, testlog) import nothing of the
// module.
func helperAllowed(pkgs map[string]*pkg, helper, dep string) bool {
	if isHelper(dep) {
		return true
	}
	if helper == "internal/testenv" || helper == "internal/testutil" || helper == "internal/testlog" {
		return false
	}
	parent := helper
	for isHelper(parent) && strings.Contains(parent, "/") {
		parent = parent[:strings.LastIndex(parent, "/")]
	}
	under := func(p, base string) bool { return p == base || strings.HasPrefix(p, base+"/") }
	if under(dep, parent) {
		return true
	}
	for _, a := range may[parent] {
		if under(dep, a) {
			return true
		}
	}
	if d, ok := pkgs[dep]; ok && !slices.ContainsFunc(d.Imports, func(i string) bool { return rel(i) != "" }) {
		return true
	}
	return false
}

func TestImportRules(t *testing.T) {
	t.Parallel()
	pkgs := list(t)
	seenAllowed := map[string]bool{}
	for p, info := range pkgs {
		if p == root || strings.HasPrefix(p, "test/") || p == "." {
			continue
		}
		allowed, listed := may[p]
		if !listed && !isHelper(p) && p != "internal/testenv" {
			t.Errorf("%s is not on the package map: add it to docs/architecture.md and to may in test/arch", p)
			continue
		}
		for _, imp := range info.Imports {
			dep := rel(imp)
			if dep == "" {
				continue
			}
			switch {
			case isHelper(p) || p == "internal/testenv":
				if !helperAllowed(pkgs, p, dep) {
					t.Errorf("test helper %s imports %s, a package above it: move the helper beside what it needs (docs/architecture.md)", p, dep)
				}
			case slices.Contains(allowed, dep):
			case p == "cmd/agora" && strings.HasPrefix(dep, "cmd/agora/internal/"):
			case p == "cmd/agora" && slices.Contains(cmdAllowed, dep):
				seenAllowed[dep] = true
			default:
				t.Errorf("%s imports %s: not allowed by docs/architecture.md (it may import %s)", p, dep, orNothing(allowed))
			}
		}
	}
	for _, dep := range cmdAllowed {
		if !seenAllowed[dep] {
			t.Errorf("cmd/agora no longer imports %s: remove it from cmdAllowed in test/arch", dep)
		}
	}
}

func orNothing(list []string) string {
	if len(list) == 0 {
		return "nothing of the module"
	}
	return strings.Join(list, ", ")
}

func TestThirdPartyImports(t *testing.T) {
	t.Parallel()
	pkgs := list(t)
	for p, info := range pkgs {
		for _, imp := range info.Imports {
			for prefix, only := range thirdParty {
				if (imp == prefix || strings.HasPrefix(imp, prefix+"/")) && !slices.Contains(only, p) {
					t.Errorf("%s imports %s: only %s may (docs/architecture.md)", p, imp, strings.Join(only, ", "))
				}
			}
		}
	}
	// wire and client import only the standard library and the module;
	// what they link beyond that is what schemas links.
	schemasDeps := pkgs["schemas"].Deps
	for _, p := range []string{"wire", "client"} {
		for _, imp := range pkgs[p].Imports {
			if !isStd(imp) && rel(imp) == "" {
				t.Errorf("%s imports %s: it may import only the standard library, schemas and wire (docs/architecture.md)", p, imp)
			}
		}
		for _, dep := range pkgs[p].Deps {
			if !isStd(dep) && rel(dep) == "" && !slices.Contains(schemasDeps, dep) {
				t.Errorf("%s links %s, which schemas does not: an integrator would pay for it (docs/architecture.md)", p, dep)
			}
		}
	}
}

func TestWorkerLinksNoServerPackage(t *testing.T) {
	t.Parallel()
	pkgs := list(t)
	for _, dep := range pkgs["cmd/agora-worker"].Deps {
		for _, bad := range workerMustNotLink {
			if strings.HasPrefix(dep, bad) {
				t.Errorf("cmd/agora-worker links %s: the static worker must not link the server side (docs/architecture.md)", dep)
			}
		}
	}
}
