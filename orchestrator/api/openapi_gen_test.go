package api

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/agoradev/agora/schemas"
	"github.com/agoradev/agora/wire"
)

// This file writes openapi.json: the paths are the table below, the
// schemas come from the wire types by reflection, so a field added to a
// wire type reaches the document when it is regenerated (go test
// ./orchestrator/api -run TestOpenAPIDocument -update-openapi), and
// TestOpenAPIDocument fails while it is not.

// goDocs are the doc comments of the wire and schemas types and their
// fields, keyed "pkg.Type" and "pkg.Type.Field", read from the source:
// the schemas' descriptions.
func goDocs() (map[string]string, error) {
	docs := map[string]string{}
	for _, dir := range []string{"../../wire", "../../schemas"} {
		fset := gotoken.NewFileSet()
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			return nil, err
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
			if err != nil {
				return nil, err
			}
			pkg := f.Name.Name
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != gotoken.TYPE {
					continue
				}
				for _, spec := range gd.Specs {
					ts := spec.(*ast.TypeSpec)
					doc := ts.Doc
					if doc == nil && len(gd.Specs) == 1 {
						doc = gd.Doc
					}
					if text := docText(doc); text != "" {
						docs[pkg+"."+ts.Name.Name] = text
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, field := range st.Fields.List {
						text := docText(field.Doc)
						if text == "" {
							text = docText(field.Comment)
						}
						for _, n := range field.Names {
							if text != "" {
								docs[pkg+"."+ts.Name.Name+"."+n.Name] = text
							}
						}
					}
				}
			}
		}
	}
	return docs, nil
}

func docText(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	return strings.Join(strings.Fields(g.Text()), " ")
}

// schemaGen turns Go types into OpenAPI 3.0 schemas under
// #/components/schemas. A type read from a request body gets a second
// component (suffix "Input"): no field required (the server requires
// fields by their meaning, not their presence) and no unknown field
// (the server refuses them).
type schemaGen struct {
	components map[string]any
	docs       map[string]string
}

// doc is the doc comment of t (and field, when given).
func (g *schemaGen) doc(t reflect.Type, field string) string {
	key := path.Base(t.PkgPath()) + "." + t.Name()
	if field != "" {
		key += "." + field
	}
	return g.docs[key]
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
	cmdType  = reflect.TypeFor[wire.Command]()
)

// enums are the closed vocabularies, written once in Go.
var enums = map[reflect.Type][]string{
	reflect.TypeFor[wire.State]():            strs(wire.States),
	reflect.TypeFor[wire.Code]():             strs(wire.Codes),
	reflect.TypeFor[wire.Kind]():             strs(wire.Kinds),
	reflect.TypeFor[schemas.EventKind]():     strs(schemas.EventKinds),
	reflect.TypeFor[schemas.FailureReason](): strs(schemas.FailureReasons),
	reflect.TypeFor[schemas.Runtime]():       {string(schemas.RuntimeExec), string(schemas.RuntimeClaudeCode)},
}

func strs[S ~string](list []S) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = string(s)
	}
	return out
}

// neverNull are fields without omitempty that the server never sends as
// null although their Go type could be nil.
var neverNull = map[string]bool{
	"TaskPage.tasks": true, "QuestionPage.questions": true, "EntryList.entries": true,
	"ParkedEventList.parked_events": true, "QuestionGroupList.groups": true, "ArtifactList.artifacts": true,
}

func componentName(t reflect.Type, in bool) string {
	name := t.Name()
	if t.PkgPath() == reflect.TypeFor[schemas.Event]().PkgPath() {
		name = "Contract" + name
	}
	if in {
		name += "Input"
	}
	return name
}

// schema is t's schema: a $ref for a named struct, inline otherwise.
func (g *schemaGen) schema(t reflect.Type, in bool) map[string]any {
	if enum, ok := enums[t]; ok {
		if in && t == reflect.TypeFor[schemas.Runtime]() {
			// A request naming a registered sub-agent (subagent_ref) sends
			// the inline subagent empty, its runtime "" included.
			enum = append([]string{""}, enum...)
		}
		return map[string]any{"type": "string", "enum": enum}
	}
	switch t {
	case timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case rawType:
		return map[string]any{"description": "any JSON value", "nullable": true}
	case cmdType:
		list := map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
		if in {
			return map[string]any{"description": "a list of arguments, or one string run with /bin/sh -c",
				"oneOf": []any{list, map[string]any{"type": "string"}}}
		}
		return list
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.schema(t.Elem(), in)
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64:
		return map[string]any{"type": "integer", "format": "int64"}
	case reflect.Int32:
		return map[string]any{"type": "integer", "format": "int32"}
	case reflect.Uint64:
		return map[string]any{"type": "integer", "format": "int64", "minimum": 0}
	case reflect.Float64:
		return map[string]any{"type": "number", "format": "double"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": g.schema(t.Elem(), in)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem(), in)}
	case reflect.Struct:
		name := componentName(t, in)
		ref := map[string]any{"$ref": "#/components/schemas/" + name}
		if _, ok := g.components[name]; ok {
			return ref
		}
		g.components[name] = nil // placeholder: recursive types end here
		g.components[name] = g.object(t, in)
		return ref
	}
	panic(fmt.Sprintf("openapi: no schema for %s", t))
}

// object is a struct's schema after encoding/json's rules: tag names,
// "-" skipped, omitempty and omitzero fields not required.
func (g *schemaGen) object(t reflect.Type, in bool) map[string]any {
	props := map[string]any{}
	var required []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		s := g.schema(f.Type, in)
		optional := strings.Contains(opts, "omitempty") && omittable(f.Type) || strings.Contains(opts, "omitzero")
		nilable := f.Type.Kind() == reflect.Pointer || f.Type.Kind() == reflect.Slice || f.Type.Kind() == reflect.Map
		if !in && !optional && nilable && f.Type != rawType && !neverNull[t.Name()+"."+name] {
			if _, isRef := s["$ref"]; isRef {
				s = map[string]any{"allOf": []any{s}}
			}
			s["nullable"] = true
		}
		if d := g.doc(t, f.Name); d != "" {
			if _, isRef := s["$ref"]; isRef {
				s = map[string]any{"allOf": []any{s}}
			}
			s["description"] = d
		}
		props[name] = s
		if !in && !optional {
			required = append(required, name)
		}
	}
	out := map[string]any{"type": "object", "properties": props}
	if d := g.doc(t, ""); d != "" {
		out["description"] = d
	}
	sort.Strings(required)
	if len(required) > 0 {
		out["required"] = required
	}
	if in {
		out["additionalProperties"] = false
	}
	return out
}

// omittable reports whether omitempty can leave a value of t out: never
// a struct.
func omittable(t reflect.Type) bool { return t.Kind() != reflect.Struct }

// op is one operation of the table.
type op struct {
	method, path, id, summary string
	description               string
	params                    []param
	body                      any // a Go value whose type is the JSON body, or a content map
	responses                 map[string]any
	public                    bool
}

type param struct {
	in, name, desc string
	schema         map[string]any
	required       bool
}

func pathParam(name, desc string) param {
	return param{"path", name, desc, map[string]any{"type": "string"}, true}
}

func query(name, desc string, schema map[string]any) param {
	return param{"query", name, desc, schema, false}
}

var pageParams = []param{
	query("limit", fmt.Sprintf("page size, 1 to %d (default %d)", wire.MaxPageLimit, wire.DefaultPageLimit),
		map[string]any{"type": "integer", "minimum": 1, "maximum": wire.MaxPageLimit}),
	query("cursor", "the next_cursor of the previous page; leave it out for the first", map[string]any{"type": "string", "minLength": 1}),
}

var taskID = pathParam("id", "the task id")

// document builds the OpenAPI document.
func openAPIDocument() (map[string]any, error) {
	docs, err := goDocs()
	if err != nil {
		return nil, err
	}
	g := &schemaGen{components: map[string]any{}, docs: docs}
	jsonOf := func(v any) map[string]any {
		return map[string]any{"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(v), false)}}
	}
	inputOf := func(v any) map[string]any {
		return map[string]any{"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(v), true)}}
	}
	ok := func(desc string, v any, headers ...string) map[string]any {
		r := map[string]any{"description": desc}
		if v != nil {
			if c, isMap := v.(map[string]any); isMap {
				r["content"] = c
			} else {
				r["content"] = jsonOf(v)
			}
		}
		if len(headers) > 0 {
			h := map[string]any{}
			for _, name := range headers {
				h[name] = map[string]any{"$ref": "#/components/headers/" + name}
			}
			r["headers"] = h
		}
		return r
	}
	errs := func(statuses ...string) map[string]any {
		out := map[string]any{"default": map[string]any{"$ref": "#/components/responses/Error"}}
		for _, s := range statuses {
			out[s] = map[string]any{"$ref": "#/components/responses/Error" + s}
		}
		return out
	}
	with := func(m map[string]any, status string, r map[string]any) map[string]any {
		m[status] = r
		return m
	}
	task := ok("the task", wire.Task{})
	textPlain := map[string]any{"text/plain": map[string]any{"schema": map[string]any{"type": "string"}}}
	anyJSON := map[string]any{"application/json": map[string]any{"schema": g.schema(rawType, false)}}

	ops := []op{
		{method: "get", path: "/healthz", id: "health", summary: "Liveness: the API answers", public: true,
			responses: with(errs(), "200", ok("the API is up", wire.Health{}))},
		{method: "get", path: "/v1/openapi.json", id: "openAPI", summary: "This document", public: true,
			responses: with(errs(), "200", ok("the OpenAPI 3 document of this API",
				map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object"}}}))},
		{method: "post", path: "/v1/tasks", id: "submitTask", summary: "Submit a task (idempotent with task_id)",
			body: wire.SubmitRequest{},
			responses: with(with(errs("400", "409", "413", "422"), "201", ok("a new task", wire.Task{}, "Location")),
				"200", ok("the task submitted earlier under the request's task_id with the same request", wire.Task{}, "Location"))},
		{method: "get", path: "/v1/tasks", id: "listTasks", summary: "One page of tasks, newest first, with counts by state",
			params: append([]param{
				query("state", "keep tasks in this state", g.schema(reflect.TypeFor[wire.State](), false)),
				query("label", "keep tasks with this label, key=value", map[string]any{"type": "string", "pattern": "^[^=]+="}),
			}, pageParams...),
			responses: with(errs("400"), "200", ok("one page", wire.TaskList{}))},
		{method: "get", path: "/v1/tasks/{id}", id: "getTask", summary: "One task", params: []param{taskID},
			responses: with(errs("400", "404"), "200", task)},
		{method: "delete", path: "/v1/tasks/{id}", id: "removeTask", summary: "Remove a task that ended", params: []param{taskID},
			responses: with(errs("400", "404", "409"), "204", ok("removed", nil))},
		{method: "post", path: "/v1/tasks/{id}/answer", id: "answerTask", summary: "Answer the task's open question",
			params: []param{taskID}, body: wire.AnswerBody{},
			responses: with(errs("400", "403", "404", "409", "413", "422"), "200", task)},
		{method: "post", path: "/v1/tasks/{id}/cancel", id: "cancelTask", summary: "Cancel the task", params: []param{taskID},
			responses: with(errs("400", "404", "409"), "200", task)},
		{method: "post", path: "/v1/tasks/{id}/respawn", id: "respawnTask", summary: "Run an ended task's last round again",
			params: []param{taskID}, responses: with(errs("400", "404", "409"), "200", task)},
		{method: "post", path: "/v1/tasks/{id}/continue", id: "continueTask", summary: "Continue a finished task with a follow-up",
			params: []param{taskID}, body: wire.ContinueBody{},
			responses: with(errs("400", "403", "404", "409", "413", "422"), "200", task)},
		{method: "post", path: "/v1/tasks/{id}/replay", id: "replayTask",
			summary:     "Run a finished task again from round 1 as a new task, answering each question from the recorded answers",
			description: "A question that is not the one recorded (text and options after normalisation) fails the replay at once; nobody is asked. The new task's replay field holds the divergences and, once it ends, the verdict. The body may be empty.",
			params:      []param{taskID}, body: wire.ReplayRequest{},
			responses: with(errs("400", "404", "409", "413", "422"), "201", ok("the replay", wire.Task{}, "Location"))},
		{method: "post", path: "/v1/tasks/{id}/fork", id: "forkTask",
			summary: "A new task from one round's workspace snapshot and partial_state, with another answer",
			params:  []param{taskID}, body: wire.ForkRequest{},
			responses: with(errs("400", "403", "404", "409", "413", "422"), "201", ok("the fork", wire.Task{}, "Location"))},
		{method: "post", path: "/v1/batches/{batch}/replay", id: "replayBatch",
			summary: "Replay every finished task of a batch into a new batch",
			params:  []param{pathParam("batch", "the batch id (the agora.batch label)")}, body: wire.ReplayRequest{},
			responses: with(errs("400", "404", "413", "422"), "201", ok("the new batch and its tasks", wire.BatchReplay{}))},
		{method: "get", path: "/v1/tasks/{id}/logs", id: "taskLogs",
			summary:     "A round's output as plain text; with follow=1 it streams until the round ends",
			description: "An error after the output began comes in the Agora-Error trailer: an #/components/schemas/ErrorBody as JSON. A stream without it ended well.",
			params: []param{taskID,
				query("round", "the round (default: the current one)", map[string]any{"type": "integer", "minimum": 1}),
				query("follow", "1 streams until the round ends", map[string]any{"type": "string", "enum": []string{"0", "1", "true", "false"}}),
			},
			responses: with(errs("400", "404"), "200", ok("the output", textPlain))},
		{method: "get", path: "/v1/tasks/{id}/result", id: "taskResult", summary: "The task's result: its last round's result.json, any JSON value",
			params: []param{taskID}, responses: with(errs("400", "404", "409"), "200", ok("the result as the sub-agent left it", anyJSON))},
		{method: "get", path: "/v1/tasks/{id}/artifacts", id: "taskArtifacts", summary: "The files the task's last round handed back",
			params: []param{taskID}, responses: with(errs("400", "404", "409"), "200", ok("the artifacts", wire.ArtifactList{}))},
		{method: "get", path: "/v1/tasks/{id}/artifacts/{name}", id: "taskArtifact",
			summary: "One artifact's bytes (HEAD gives the headers only); name is a relative path whose '/' may be sent as is",
			params:  []param{taskID, pathParam("name", "the artifact's name, a relative path")},
			responses: with(errs("400", "404", "409"), "200", ok("the artifact",
				map[string]any{"application/octet-stream": map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}}},
				"ETag", "Repr-Digest", "Digest", "Content-Disposition"))},
		{method: "post", path: "/v1/tasks/{id}/answer-all-like", id: "answerAllLike",
			summary: "Answer the task's open question and every open question like it (its group)",
			params:  []param{taskID}, body: wire.AnswerBody{},
			responses: with(errs("400", "403", "404", "409", "413", "422"), "200", ok("what became of each task", wire.GroupAnswerResult{}))},
		{method: "get", path: "/v1/questions", id: "listQuestions", summary: "One page of open questions, oldest first",
			params: pageParams, responses: with(errs("400"), "200", ok("one page", wire.QuestionList{}))},
		{method: "get", path: "/v1/question-groups", id: "listQuestionGroups", summary: "Open questions grouped by question and batch",
			params:    []param{query("batch", "keep the groups of one batch", map[string]any{"type": "string"})},
			responses: with(errs("400"), "200", ok("every group", wire.QuestionGroupList{}))},
		{method: "get", path: "/v1/stats", id: "stats", summary: "Question quality and round economics per sub-agent, over the tasks the caller may see",
			description: "Counts every task the caller may see (an admin or answerer token: all; any other token: its own), narrowed by the parameters given; docs/stats.md says how each number is computed.",
			params: []param{query("subagent", "keep the tasks of one sub-agent (its name)", map[string]any{"type": "string"}),
				query("label", "keep the tasks with this label, key=value", map[string]any{"type": "string"}),
				query("batch", "keep the tasks of one batch (label agora.batch=ID); not with label", map[string]any{"type": "string"}),
				query("since", "keep the tasks created at or after this RFC 3339 time", map[string]any{"type": "string", "format": "date-time"}),
				query("limit", "list at most this many sub-agents, most tasks first (total counts every one)",
					map[string]any{"type": "integer", "minimum": 1, "maximum": wire.MaxPageLimit})},
			responses: with(errs("400"), "200", ok("the stats", wire.Stats{}))},
		{method: "post", path: "/v1/question-groups/{group}/answer", id: "answerQuestionGroup",
			summary: "Answer every open question of a group",
			params:  []param{pathParam("group", "the group id, 24 hex digits")}, body: wire.AnswerBody{},
			responses: with(errs("400", "403", "409", "413", "422"), "200", ok("what became of each task", wire.GroupAnswerResult{}))},
		{method: "get", path: "/v1/events", id: "events",
			summary:     "Server-sent events: `event: task` with a Change as data for every task change, `event: error` with an ErrorBody before the stream ends on a failure, `: heartbeat` comments",
			description: "Each `event: task` carries one #/components/schemas/Change as its `data:` line, each `event: error` one #/components/schemas/ErrorBody (the stream ends after it). Comment lines (`: stream open`, `: heartbeat`) keep the stream alive.",
			params:      []param{query("task", "keep the changes of one task", map[string]any{"type": "string"})},
			responses: with(errs("400"), "200", ok("the stream",
				map[string]any{"text/event-stream": map[string]any{"schema": map[string]any{"type": "string"}}}))},
		{method: "get", path: "/v1/parked-events", id: "listParkedEvents", summary: "Events the orchestrator could not apply (admin)",
			responses: with(errs("403"), "200", ok("the parked events and the pipeline's counts", wire.ParkedEventList{}))},
		{method: "post", path: "/v1/parked-events/{seq}/retry", id: "retryParkedEvent", summary: "Apply a parked event again (admin)",
			params:    []param{pathParam("seq", "the event's stream sequence")},
			responses: with(errs("400", "403", "404"), "204", ok("retried", nil))},
		{method: "delete", path: "/v1/parked-events/{seq}", id: "discardParkedEvent", summary: "Discard a parked event (admin)",
			params:    []param{pathParam("seq", "the event's stream sequence")},
			responses: with(errs("400", "403", "404"), "204", ok("discarded", nil))},
		{method: "get", path: "/v1/rules", id: "listRules", summary: "One page of the remembered-answer rules the token may see, by id",
			params: pageParams, responses: with(errs("400"), "200", ok("one page", wire.RuleList{}))},
		{method: "get", path: "/v1/rules/{rule}", id: "getRule", summary: "One remembered-answer rule",
			params:    []param{pathParam("rule", "the rule id, r- and 16 hex digits")},
			responses: with(errs("400", "404"), "200", ok("the rule", wire.Rule{}))},
		{method: "delete", path: "/v1/rules/{rule}", id: "removeRule", summary: "Remove a rule (its owner, who made it, or an admin)",
			params:    []param{pathParam("rule", "the rule id, r- and 16 hex digits")},
			responses: with(errs("400", "403", "404"), "204", ok("removed", nil))},
		{method: "post", path: "/v1/subagents", id: "registerSubagent", summary: "Register a sub-agent definition",
			body:      wire.Subagent{},
			responses: with(with(errs("400", "413", "422"), "201", ok("a new version", wire.Registered{})), "200", ok("identical content was registered already", wire.Registered{}))},
		{method: "post", path: "/v1/capabilities", id: "registerCapability", summary: "Register a capability: the tar as the body",
			params: []param{{"query", "name", "the capability's name", map[string]any{"type": "string", "minLength": 1}, true},
				query("description", "what it holds", map[string]any{"type": "string"})},
			body:      map[string]any{"application/x-tar": map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}}},
			responses: with(with(errs("400", "413", "422"), "201", ok("a new version", wire.Registered{})), "200", ok("identical content was registered already", wire.Registered{}))},
		{method: "post", path: "/v1/envs", id: "registerEnv", summary: "Register an env bundle: values and secret refs",
			body:      wire.Env{},
			responses: with(with(errs("400", "413", "422"), "201", ok("a new version", wire.Registered{})), "200", ok("identical content was registered already", wire.Registered{}))},
	}
	for _, kind := range []struct{ seg, name string }{{"subagents", "Subagent"}, {"capabilities", "Capability"}, {"envs", "Env"}} {
		ops = append(ops,
			op{method: "get", path: "/v1/" + kind.seg, id: "list" + kind.name + "s", summary: "One page of the registered " + kind.seg + ", the newest version of each name",
				params: pageParams, responses: with(errs("400"), "200", ok("one page", wire.EntryList{}))},
			op{method: "get", path: "/v1/" + kind.seg + "/{ref}", id: "get" + kind.name, summary: "One version: NAME (the newest) or NAME@VERSION",
				params: []param{pathParam("ref", "NAME or NAME@VERSION")}, responses: with(errs("400", "404"), "200", ok("the entry", wire.Entry{}))},
			op{method: "get", path: "/v1/" + kind.seg + "/{ref}/versions", id: "list" + kind.name + "Versions", summary: "One page of a name's versions",
				params:    append([]param{pathParam("ref", "NAME")}, pageParams...),
				responses: with(errs("400", "404"), "200", ok("one page", wire.EntryList{}))},
		)
	}

	paths := map[string]any{}
	for _, o := range ops {
		item, _ := paths[o.path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[o.path] = item
		}
		operation := map[string]any{"operationId": o.id, "summary": o.summary, "responses": o.responses}
		if o.description != "" {
			operation["description"] = o.description
		}
		if len(o.params) > 0 {
			var ps []any
			for _, p := range o.params {
				m := map[string]any{"in": p.in, "name": p.name, "description": p.desc, "schema": p.schema}
				if p.required {
					m["required"] = true
				}
				ps = append(ps, m)
			}
			operation["parameters"] = ps
		}
		if o.body != nil {
			content, isMap := o.body.(map[string]any)
			if !isMap {
				content = inputOf(o.body)
			}
			operation["requestBody"] = map[string]any{"required": true, "content": content}
		}
		if o.public {
			operation["security"] = []any{}
		}
		item[o.method] = operation
	}

	errorBody := g.schema(reflect.TypeFor[wire.ErrorBody](), false)
	// The data of the events stream: not a body, so named here.
	g.schema(reflect.TypeFor[wire.Change](), false)
	errorContent := map[string]any{"application/json": map[string]any{"schema": errorBody}}
	responses := map[string]any{
		"Error": map[string]any{"description": "an error; the code says which kind (405 lists the methods in Allow)", "content": errorContent,
			"headers": map[string]any{"Allow": map[string]any{"$ref": "#/components/headers/Allow"}}},
	}
	for status, desc := range map[string]string{
		"400": "the request cannot be read: a bad body, query or id (code invalid)",
		"403": "the token may not do this (code unauthorized)",
		"404": "no such task or entry (code not_found)",
		"409": "the task's state does not allow it (conflict, already_answered, no_question, wrong_state)",
		"413": "the body is larger than the server takes (code invalid)",
		"422": "the orchestrator refused the request (invalid, invalid_answer)",
	} {
		responses["Error"+status] = map[string]any{"description": desc, "content": errorContent}
	}
	for _, o := range ops {
		if !o.public {
			o.responses["401"] = map[string]any{"$ref": "#/components/responses/Error401"}
			o.responses["429"] = map[string]any{"$ref": "#/components/responses/Error429"}
		}
	}
	responses["Error401"] = map[string]any{"description": "no token, or an unknown one (code unauthorized)", "content": errorContent,
		"headers": map[string]any{"WWW-Authenticate": map[string]any{"$ref": "#/components/headers/WWW-Authenticate"}}}
	responses["Error429"] = map[string]any{"description": "too many failed attempts from this client (code rate_limited)", "content": errorContent,
		"headers": map[string]any{"Retry-After": map[string]any{"$ref": "#/components/headers/Retry-After"}}}

	str := map[string]any{"type": "string"}
	header := func(desc string) map[string]any { return map[string]any{"description": desc, "schema": str} }
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{
			"title":       "agora API",
			"version":     "1",
			"description": "Tasks, questions, answers, logs, results and the registry of an agora orchestrator. docs/api.md describes it in prose; this document is generated from the wire types (package wire) and checked against the server in its tests.",
		},
		"servers":  []any{map[string]any{"url": "http://127.0.0.1:7070", "description": "agora serve's default address"}},
		"security": []any{map[string]any{"bearerAuth": []any{}}, map[string]any{}},
		"paths":    paths,
		"components": map[string]any{
			"schemas":   g.components,
			"responses": responses,
			"headers": map[string]any{
				"Location":            header("the task's path, /v1/tasks/{id}"),
				"Retry-After":         map[string]any{"description": "seconds to wait before trying again", "schema": map[string]any{"type": "integer", "minimum": 0}},
				"WWW-Authenticate":    header(`Bearer realm="agora"`),
				"Allow":               header("on 405: the methods the path takes"),
				"ETag":                header("the artifact's sha256 in hex, quoted"),
				"Repr-Digest":         header("sha-256=:BASE64: (RFC 9530)"),
				"Digest":              header("sha-256=BASE64 (RFC 3230)"),
				"Content-Disposition": header("attachment; filename=the artifact's base name"),
			},
			"securitySchemes": map[string]any{
				"bearerAuth": map[string]any{"type": "http", "scheme": "bearer",
					"description": "a token the operator configured; an API without tokens serves loopback clients without one"},
			},
		},
	}, nil
}

// openAPIRoutes are the document's operations as "METHOD /path".
func openAPIRoutes(doc map[string]any) []string {
	var out []string
	for p, item := range doc["paths"].(map[string]any) {
		for m := range item.(map[string]any) {
			out = append(out, strings.ToUpper(m)+" "+p)
		}
	}
	sort.Strings(out)
	return out
}
