package schemas

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// readers are the functions that read a document from outside agora
// (docs/contract.md, "Reading JSON"), by file and function: each calls
// this package's reader (Decode, DecodeKnown or a Parse function) and
// never encoding/json's decoding.
var readers = map[string]string{
	"schemas/validate.go:ParseDispatchSpec":                   "the dispatch spec (worker)",
	"schemas/validate.go:ParseNeedsInput":                     "the sentinel (worker/sentinel)",
	"schemas/validate.go:ParseDispatchRequest":                "dispatch requests (runner, bus queue)",
	"schemas/validate.go:ParseEvent":                          "event lines (runner, bus consumer)",
	"worker/worker.go:readSpec":                               "the spec file",
	"worker/sentinel/sentinel.go:Parse":                       "the sentinel file",
	"worker/result.go:readResult":                             "result.json",
	"worker/exchange.go:readPrivate":                          "private.json",
	"worker/bundles.go:fetchEnv":                              "env bundles",
	"orchestrator/api/api.go:decode":                          "API request bodies",
	"orchestrator/orchestrator.go:validate":                   "a submitted task's input",
	"registryfile/file.go:parse":                              "registry files (YAML turned into JSON)",
	"internal/bus/events.go:storedOn":                         "stored events (their kind)",
	"internal/bus/events.go:counted":                          "stored events",
	"internal/bus/queue.go:SubscribeEvents":                   "live events",
	"internal/bus/consume.go:readEvent":                       "consumed events",
	"orchestrator/answer/slackanswer/events.go:EventsHandler": "Slack Events API bodies",
	"orchestrator/answer/slackanswer/events.go:answerReply":   "recorded Slack events",
	"client/batch.go:decodeBatchLine":                         "batch files",
	"cmd/agora/internal/submitreq/submitreq.go:readInput":     "agora dispatch --input",
	"orchestrator/answer/webhook.go:parseAnswer":              "a webhook answerer's response",
	"orchestrator/answer/agent.go:agentAnswer":                "an answering agent's {\"answer\": …}",
	"orchestrator/answer/lookup.go:parseJSONRules":            "a JSON lookup-rules file",
	"runner/secrets.go:bundleRefs":                            "env bundles (their secret refs)",
	"orchestrator/identity.go:checkLocalSecrets":              "env bundles (their secret refs)",
}

// TestOutsideJSONReadOneWay: the readers above use this package's reader,
// and encoding/json's Unmarshal or NewDecoder is called nowhere else in
// production code but where this list says why that is not a document
// from outside. A new call fails here until it is one or the other.
func TestOutsideJSONReadOneWay(t *testing.T) {
	t.Parallel()
	calls, strict := jsonCalls(t)
	for key, what := range readers {
		if !strict[key] {
			t.Errorf("%s reads %s without schemas.Decode (or the function moved: update readers)", key, what)
		}
	}
	var unlisted []string
	for key, pos := range calls {
		if _, ok := readers[key]; ok {
			t.Errorf("%s: reader of %s calls encoding/json to decode", pos, readers[key])
			continue
		}
		if _, ok := notOutside[key]; !ok {
			unlisted = append(unlisted, pos+" ("+key+")")
		}
	}
	sort.Strings(unlisted)
	for _, u := range unlisted {
		t.Errorf("%s decodes with encoding/json: read an outside document with schemas.Decode, or add it to notOutside saying why it is not one", u)
	}
	for key := range notOutside {
		if _, ok := calls[key]; !ok {
			t.Errorf("notOutside lists %s, which no longer calls encoding/json: remove it", key)
		}
	}
}

// jsonCalls finds, in the module's non-test Go files, the functions that
// call json.Unmarshal or json.NewDecoder (key → first position) and those
// that call this package's reader.
func jsonCalls(t *testing.T) (calls map[string]string, strict map[string]bool) {
	t.Helper()
	calls, strict = map[string]string{}, map[string]bool{}
	root := ".."
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			// Test data, and test fakes (ecsfake, slackfake, awssmtest,
			// fakeclaude): linked only by tests.
			if name == "testdata" || (strings.HasPrefix(name, ".") && path != root) ||
				strings.HasSuffix(name, "fake") || strings.HasPrefix(name, "fake") || strings.HasSuffix(name, "test") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Base(path) == "decode.go" && filepath.Base(filepath.Dir(path)) == "schemas" {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		jsonName, schemasName := "", ""
		for _, imp := range f.Imports {
			name := ""
			if imp.Name != nil {
				name = imp.Name.Name
			}
			switch strings.Trim(imp.Path.Value, `"`) {
			case "encoding/json":
				jsonName = cmpName(name, "json")
			case "github.com/agoradev/agora/schemas":
				schemasName = cmpName(name, "schemas")
			}
		}
		inSchemas := f.Name.Name == "schemas" && strings.HasPrefix(rel, "schemas/")
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			key := rel + ":" + fn.Name.Name
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				switch fun := call.Fun.(type) {
				case *ast.SelectorExpr:
					x, ok := fun.X.(*ast.Ident)
					if !ok {
						return true
					}
					if jsonName != "" && x.Name == jsonName && (fun.Sel.Name == "Unmarshal" || fun.Sel.Name == "NewDecoder") {
						if _, seen := calls[key]; !seen {
							calls[key] = fset.Position(call.Pos()).String()
						}
					}
					if schemasName != "" && x.Name == schemasName && isStrictReader(fun.Sel.Name) {
						strict[key] = true
					}
				case *ast.Ident:
					if inSchemas && isStrictReader(fun.Name) {
						strict[key] = true
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return calls, strict
}

func cmpName(name, def string) string {
	if name == "" {
		return def
	}
	return name
}

func isStrictReader(name string) bool {
	return name == "Decode" || name == "DecodeKnown" || strings.HasPrefix(name, "Parse") && name != "ParseEventSubject"
}

// notOutside are the other callers of encoding/json's decoding, with why
// what they read is not a document from outside agora.
var notOutside = map[string]string{
	// agora's own state, written by agora (KV buckets, object storage).
	"internal/bus/chunked.go:Get":                          "a chunked value's head this process's peers wrote",
	"internal/bus/chunked.go:Put":                          "a chunked value's head this process's peers wrote",
	"orchestrator/snapshot.go:loadSnapshot":                "the task index snapshot an orchestrator saved (SHA-256 checked)",
	"internal/bus/claim.go:GetClaim":                       "a claim the runner wrote",
	"internal/workspace/workspace.go:ReadRecord":           "the workspace record a worker wrote",
	"orchestrator/store.go:get":                            "a task the orchestrator stored",
	"orchestrator/store.go:Recall":                         "a round the orchestrator stored",
	"orchestrator/cache.go:newEntry":                       "the orchestrator's own cache entries",
	"orchestrator/cache_open.go:openOfView":                "an open task's list view from the task index snapshot an orchestrator saved",
	"orchestrator/cache_open.go:task":                      "an open task's list view the task cache encoded itself",
	"orchestrator/watchhub.go:publish":                     "tasks the orchestrator stored",
	"orchestrator/pipeline.go:startPipeline":               "parked events the orchestrator stored",
	"orchestrator/logs.go:followOutput":                    "tasks the orchestrator stored",
	"orchestrator/conflict.go:fieldsOf":                    "a request already read by the API (an object of exact keys)",
	"orchestrator/conflict.go:objectOf":                    "a request already read by the API (an object of exact keys)",
	"orchestrator/dispatch.go:withAnswer":                  "a task's input, read at submit",
	"orchestrator/web/pages.go:resultOf":                   "a result the worker read strictly",
	"orchestrator/registry/registry.go:register":           "registry heads the orchestrator stored",
	"orchestrator/registry/registry.go:entry":              "registry entries the orchestrator stored",
	"orchestrator/registry/registry.go:Get":                "registry heads the orchestrator stored",
	"orchestrator/registry/registry.go:Versions":           "registry entries the orchestrator stored",
	"orchestrator/registry/registry.go:List":               "registry entries the orchestrator stored",
	"registryfile/file.go:knownFields":                     "this module's embedded schemas",
	"orchestrator/replay.go:resultDigest":                  "a result already accepted with its event, canonicalised to compare two runs",
	"orchestrator/rules.go:followRules":                    "rules this orchestrator stored in its own KV bucket",
	"orchestrator/rules.go:eachRule":                       "rules this orchestrator stored in its own KV bucket",
	"orchestrator/rules.go:readRule":                       "rules this orchestrator stored in its own KV bucket",
	"orchestrator/answer/slackanswer/store.go:decode":      "the bot's own KV records",
	"orchestrator/answer/slackanswer/follow.go:resultHead": "a result the worker read strictly, rendered",
	"worker/sentinel/sentinel.go:Warnings":                 "a sentinel already read by Parse; keys compared exactly",
	"worker/redact.go:JSON":                                "redaction of a line the worker writes",
	"runner/egress.go:followEgress":                        "the egress proxy's log, agora's own container",
	// Answers of agora's own server, read by its client and CLI.
	"client/client.go:send":                       "the server's responses",
	"client/client.go:errorOf":                    "the server's error bodies",
	"client/logs.go:Logs":                         "the server's error bodies",
	"client/watch.go:next":                        "the server's event stream",
	"cmd/agora/internal/idnames/idnames.go:Write": "the server's responses (-o name)",
	"cmd/agora/internal/view/result.go:Result":    "a result the server returned",
	"wire/registry.go:UnmarshalJSON":              "a string or list of strings, called by the reader with the raw value",
	// Other programs and services, decoded into their own shapes, with no
	// contract field names to confuse.
	"internal/bus/leaderget.go:leaderGet":                 "the NATS server's JetStream API answer to a message get (an event inside is read by storedOn and counted)",
	"internal/compute/procbench/replay.go:cancelledEvent": "an event line the replaying engine recorded from the real worker (benchmarks only)",
	"adapters/claudecode/stream.go:parse":                 "Claude Code's stream-json output, read leniently",
	"internal/compute/docker/image.go:readBuildOutput":    "the Docker daemon's build stream",
	"internal/secrets/awssm/awssm.go:jsonField":           "a Secrets Manager value: one key looked up exactly in a map",
	"orchestrator/answer/slackanswer/interact.go:act":     "slack-go's InteractionCallback, which decodes itself",
}
