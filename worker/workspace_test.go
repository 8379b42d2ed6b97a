package worker

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agoradev/agora/adapters/claudecode"
	"github.com/agoradev/agora/adapters/exec"
	"github.com/agoradev/agora/schemas"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestSafeRelPath(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		"a.txt":             "a.txt",
		"tools/":            "tools",
		"tools/lint.sh":     "tools/lint.sh",
		"./top.txt":         "top.txt",
		"a//b/./c":          "a/b/c",
		".":                 ".",
		"./":                ".",
		"...":               "...", // a name, not a climb
		"a/..b/c..":         "a/..b/c..",
		".agora/input.json": ".agora/input.json",
	}
	for in, want := range good {
		got, err := safeRelPath(in)
		if err != nil || got != want {
			t.Errorf("safeRelPath(%q) = %q, %v; want %q, nil", in, got, err, want)
		}
	}
	// A NUL cannot come out of archive/tar (it ends a name), so only this
	// table reaches that check.
	bad := map[string]string{
		"":               "empty path",
		"..":             `climbs out with ".."`,
		"../x":           `climbs out with ".."`,
		"a/../b":         `climbs out with ".."`,
		"a/b/..":         `climbs out with ".."`,
		"a/../../x":      `climbs out with ".."`,
		"/etc/passwd":    "absolute path",
		"/":              "absolute path",
		`dir\evil.txt`:   "backslash",
		`..\..\x`:        "backslash",
		"a\x00b":         "NUL",
		"tools/\x00.txt": "NUL",
	}
	for in, want := range bad {
		got, err := safeRelPath(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("safeRelPath(%q) = %q, %v; want an error containing %q", in, got, err, want)
		}
	}
}

// readTree lists everything under dir: "dir" for a directory, "<perm>
// <content>" for a file, "-> <target>" for a symlink.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	tree := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			tree[rel] = "-> " + target
		case fi.IsDir():
			tree[rel] = "dir"
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			tree[rel] = fmt.Sprintf("%04o %s", fi.Mode().Perm(), data)
		default:
			tree[rel] = fi.Mode().Type().String()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read tree %s: %v", dir, err)
	}
	return tree
}

func diffTree(t *testing.T, call string, got, want map[string]string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			t.Errorf("%s: %s = %q, want %q", call, k, got[k], want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected %s (%q)", call, k, got[k])
		}
	}
}

func TestOverlayCapabilityGoodTree(t *testing.T) {
	t.Parallel()
	tree := tarball(t,
		tarEntry{name: "./", typ: tar.TypeDir, mode: 0o755},
		tarEntry{name: "tools/", typ: tar.TypeDir, mode: 0o755},
		tarEntry{name: "tools/lint.sh", body: "echo lint\n", mode: 0o755},
		tarEntry{name: "tools/private.sh", body: "echo private\n", mode: 0o700}, // any exec bit: 0755
		tarEntry{name: "docs/guide/deep/readme.md", body: "read me"},            // parents without entries
		tarEntry{name: "./top.txt", body: "top", mode: 0o600},                   // no exec bit: 0644
		tarEntry{name: "empty.txt"},
		tarEntry{name: "keep.txt", body: "from the bundle"},
	)
	want := map[string]string{
		"tools":                     "dir",
		"tools/lint.sh":             "0755 echo lint\n",
		"tools/private.sh":          "0755 echo private\n",
		"docs":                      "dir",
		"docs/guide":                "dir",
		"docs/guide/deep":           "dir",
		"docs/guide/deep/readme.md": "0644 read me",
		"top.txt":                   "0644 top",
		"empty.txt":                 "0644 ",
		"keep.txt":                  "0644 from the bundle", // overwritten
		"untouched.txt":             "0644 mine",            // not in the bundle: left alone
	}
	for name, data := range map[string][]byte{"tar": tree, "tar.gz": gzipped(t, tree)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			for _, f := range []string{"keep.txt", "untouched.txt"} {
				if err := os.WriteFile(filepath.Join(ws, f), []byte("mine"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := overlayCapability(ws, capability{ref: schemas.BundleRef{Name: "tools"}, data: data}); err != nil {
				t.Fatalf("overlayCapability: %v", err)
			}
			diffTree(t, "overlayCapability", readTree(t, ws), want)
		})
	}
}

// TestOverlayCapabilityInOrder: capabilities are overlaid in spec order, a
// later one replacing the content and mode of an earlier one's file.
func TestOverlayCapabilityInOrder(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	caps := []capability{
		{ref: schemas.BundleRef{Name: "first"}, data: tarball(t, tarEntry{name: "run.sh", body: "v1", mode: 0o755}, tarEntry{name: "a.txt", body: "a"})},
		{ref: schemas.BundleRef{Name: "second"}, data: gzipped(t, tarball(t, tarEntry{name: "run.sh", body: "v2", mode: 0o644}))},
	}
	for _, c := range caps {
		if err := overlayCapability(ws, c); err != nil {
			t.Fatalf("overlayCapability(%s): %v", c.ref.Name, err)
		}
	}
	diffTree(t, "overlayCapability", readTree(t, ws), map[string]string{"run.sh": "0644 v2", "a.txt": "0644 a"})
}

// manyEntries is an archive of n "./" entries: cheap to build and to skip,
// so only the entry count is tested.
func manyEntries(t *testing.T, n int) []byte {
	t.Helper()
	var hdr bytes.Buffer
	if err := tar.NewWriter(&hdr).WriteHeader(&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	if hdr.Len() != 512 {
		t.Fatalf("one tar header is %d bytes, want 512", hdr.Len())
	}
	return append(bytes.Repeat(hdr.Bytes(), n), make([]byte, 1024)...)
}

func TestOverlayCapabilityRejects(t *testing.T) {
	t.Parallel()
	// outside is a directory next to the workspace that nothing may touch.
	type dirs struct{ ws, outside string }
	symlink := func(target, name string) func(t *testing.T, d dirs) {
		return func(t *testing.T, d dirs) {
			t.Helper()
			if strings.HasPrefix(target, "OUT") {
				target = filepath.Join(d.outside, strings.TrimPrefix(target, "OUT"))
			}
			if err := os.MkdirAll(filepath.Dir(filepath.Join(d.ws, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, filepath.Join(d.ws, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name  string
		data  func(t *testing.T) []byte
		setup func(t *testing.T, d dirs)
		want  []string
	}{
		{name: "dot-dot first", data: entries(tarEntry{name: "../escape.txt", body: "x"}),
			want: []string{`entry "../escape.txt"`, `climbs out with ".."`}},
		{name: "dot-dot in the middle", data: entries(tarEntry{name: "a/../../escape.txt", body: "x"}),
			want: []string{`entry "a/../../escape.txt"`, "climbs out"}},
		{name: "dot-dot last", data: entries(tarEntry{name: "a/..", typ: tar.TypeDir}),
			want: []string{`entry "a/.."`, "climbs out"}},
		{name: "dot-dot after good entries", data: entries(tarEntry{name: "ok.txt", body: "fine"}, tarEntry{name: "../../escape.txt", body: "x"}),
			want: []string{`entry "../../escape.txt"`, "climbs out"}},
		{name: "absolute path", data: entries(tarEntry{name: "/etc/evil", body: "x"}),
			want: []string{`entry "/etc/evil"`, "absolute path"}},
		{name: "backslash", data: entries(tarEntry{name: `..\escape.txt`, body: "x"}),
			want: []string{`entry "..\\escape.txt"`, "backslash"}},
		{name: "symlink entry", data: entries(tarEntry{name: "link", typ: tar.TypeSymlink, link: "/etc"}),
			want: []string{`entry "link"`, `unsupported entry type "2"`}},
		{name: "hardlink entry", data: entries(tarEntry{name: "a.txt", body: "a"}, tarEntry{name: "hard", typ: tar.TypeLink, link: "a.txt"}),
			want: []string{`entry "hard"`, `unsupported entry type "1"`}},
		{name: "char device entry", data: entries(tarEntry{name: "null", typ: tar.TypeChar}),
			want: []string{`entry "null"`, `unsupported entry type "3"`}},
		{name: "fifo entry", data: entries(tarEntry{name: "pipe", typ: tar.TypeFifo}),
			want: []string{`entry "pipe"`, `unsupported entry type "6"`}},
		{name: "file through a workspace symlink dir", data: entries(tarEntry{name: "tools/lint.sh", body: "x"}),
			setup: symlink("OUT", "tools"),
			want:  []string{`entry "tools/lint.sh"`, "tools is a symlink in the workspace; refusing to write through it"}},
		{name: "directory through a workspace symlink", data: entries(tarEntry{name: "tools/", typ: tar.TypeDir}),
			setup: symlink("OUT", "tools"),
			want:  []string{`entry "tools/"`, "tools is a symlink"}},
		{name: "file through a deeper workspace symlink", data: entries(tarEntry{name: "a/b/c/d.txt", body: "x"}),
			setup: symlink("OUT", "a/b"),
			want:  []string{`entry "a/b/c/d.txt"`, "a/b is a symlink"}},
		{name: "file that is a workspace symlink", data: entries(tarEntry{name: "config.txt", body: "overwritten"}),
			setup: func(t *testing.T, d dirs) {
				if err := os.WriteFile(filepath.Join(d.outside, "target.txt"), []byte("original"), 0o644); err != nil {
					t.Fatal(err)
				}
				symlink("OUTtarget.txt", "config.txt")(t, d)
			},
			want: []string{`entry "config.txt"`, "config.txt is a symlink"}},
		{name: "workspace symlink that stays inside", data: entries(tarEntry{name: "alias/x.txt", body: "x"}),
			setup: func(t *testing.T, d dirs) {
				if err := os.Mkdir(filepath.Join(d.ws, "real"), 0o755); err != nil {
					t.Fatal(err)
				}
				symlink("real", "alias")(t, d)
			},
			want: []string{`entry "alias/x.txt"`, "alias is a symlink"}},
		{name: "file that is a workspace fifo", data: entries(tarEntry{name: "pipe.txt", body: "x"}),
			setup: func(t *testing.T, d dirs) {
				if err := syscall.Mkfifo(filepath.Join(d.ws, "pipe.txt"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{`entry "pipe.txt"`, "pipe.txt is a fifo in the workspace"}},
		{name: "one entry over the byte cap", data: entries(tarEntry{name: "huge.bin", size: maxOverlayBytes + 1}),
			want: []string{`entry "huge.bin"`, fmt.Sprintf("unpacks to more than %d bytes", maxOverlayBytes)}},
		{name: "entries summing over the byte cap", data: entries(tarEntry{name: "a.bin", body: "0123456789"}, tarEntry{name: "b.bin", size: maxOverlayBytes - 9}),
			want: []string{`entry "b.bin"`, "unpacks to more than"}},
		{name: "more entries than the cap", data: func(t *testing.T) []byte { return manyEntries(t, maxOverlayFiles+1) },
			want: []string{`entry "./"`, fmt.Sprintf("more than %d entries", maxOverlayFiles)}},
		{name: "truncated archive", data: entries(tarEntry{name: "cut.txt", size: 100}),
			want: []string{`entry "cut.txt"`, "unexpected EOF"}},
		{name: "garbage, short", data: raw([]byte("this is not a tar archive")),
			want: []string{"capability evil", "not a tar archive"}},
		{name: "garbage, a block long", data: raw(bytes.Repeat([]byte("x"), 1024)),
			want: []string{"capability evil", "not a tar archive"}},
		{name: "gzip magic, then garbage", data: raw([]byte("\x1f\x8bnot really gzip")),
			want: []string{"capability evil", "not a gzip archive"}},
		{name: "gzip of garbage", data: func(t *testing.T) []byte { return gzipped(t, []byte("not a tar inside")) },
			want: []string{"capability evil", "not a tar archive"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			d := dirs{ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
			for _, dir := range []string{d.ws, d.outside} {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if tt.setup != nil {
				tt.setup(t, d)
			}
			outsideBefore := readTree(t, d.outside)

			err := overlayCapability(d.ws, capability{ref: schemas.BundleRef{Name: "evil"}, data: tt.data(t)})
			wantOutcome(t, "overlayCapability", err, schemas.ReasonIntegrityFailed, append([]string{"bad bundle path: capability evil"}, tt.want...)...)

			diffTree(t, "outside the workspace", readTree(t, d.outside), outsideBefore)
			for _, name := range []string{"escape.txt", "evil"} {
				if _, err := os.Lstat(filepath.Join(base, name)); err == nil {
					t.Errorf("%s was written next to the workspace", name)
				}
			}
			if _, err := os.Lstat(filepath.Join(d.ws, "huge.bin")); err == nil {
				t.Errorf("huge.bin was created before the cap was checked")
			}
		})
	}
}

func entries(es ...tarEntry) func(t *testing.T) []byte {
	return func(t *testing.T) []byte { return tarball(t, es...) }
}

func raw(data []byte) func(t *testing.T) []byte {
	return func(*testing.T) []byte { return data }
}

// golden compares got with testdata/<name>, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

func TestPrepareWorkspace(t *testing.T) {
	t.Parallel()
	skill := []byte("---\nname: agora-needs-input\n---\nAsk through the sentinel.\n")
	const (
		input    = ".agora/input.json"
		resume   = ".agora/resume.json"
		sentinel = ".agora/needs_input.json"
	)
	spec := func(mutate func(s *schemas.DispatchSpec)) *schemas.DispatchSpec {
		s := &schemas.DispatchSpec{DispatchID: "d-1", TaskID: "t-1",
			Subagent: schemas.Subagent{Name: "fixer", Runtime: schemas.RuntimeExec, Command: []string{"true"}}}
		if mutate != nil {
			mutate(s)
		}
		return s
	}
	resumed := func(r *schemas.Resume) func(s *schemas.DispatchSpec) {
		return func(s *schemas.DispatchSpec) { s.Round, s.Resume = 2, r }
	}
	writeWS := func(rel, content string) func(t *testing.T, ws, outside string) {
		return func(t *testing.T, ws, _ string) {
			p := filepath.Join(ws, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name         string
		spec         *schemas.DispatchSpec
		skillPath    string
		noSkill      bool
		partialState json.RawMessage
		setup        func(t *testing.T, ws, outside string)
		want         map[string]string // workspace path → content
		absent       []string
		golden       string // resume.json compared with testdata/<golden>
		wantErr      string
	}{
		{name: "first round without input", spec: spec(nil),
			want:   map[string]string{input: "{}\n", exec.SkillPath: string(skill)},
			absent: []string{resume, sentinel}},
		{name: "first round with input", spec: spec(func(s *schemas.DispatchSpec) { s.Input = json.RawMessage(`{"repo":"example","n":1}`) }),
			want: map[string]string{input: "{\"repo\":\"example\",\"n\":1}\n"}},
		{name: "stale resume.json removed on a first round", spec: spec(nil), setup: writeWS(resume, `{"round":1}`),
			absent: []string{resume}},
		{name: "stale sentinel removed", spec: spec(nil), setup: writeWS(sentinel, `{"question":"stale?"}`),
			want: map[string]string{input: "{}\n"}, absent: []string{sentinel}},
		{name: "stale input.json replaced", spec: spec(nil), setup: writeWS(input, `{"old":true, "much":"longer than the new one"}`),
			want: map[string]string{input: "{}\n"}},
		{name: "no skill when disabled", spec: spec(nil), noSkill: true,
			want: map[string]string{input: "{}\n"}, absent: []string{".agora/skills"}},
		{name: "skill at the claude-code path", spec: spec(nil), skillPath: claudecode.SkillPath,
			want: map[string]string{claudecode.SkillPath: string(skill)}, absent: []string{".agora/skills"}},
		{name: ".agora is a symlink", spec: spec(nil),
			setup: func(t *testing.T, ws, outside string) {
				if err := os.Symlink(outside, filepath.Join(ws, ".agora")); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]string{input: "{}\n", exec.SkillPath: string(skill)}},
		{name: ".agora is a file", spec: spec(nil), setup: writeWS(".agora", "not a directory"),
			want: map[string]string{input: "{}\n"}},
		{name: "resumed round", golden: "resume-full.golden.json", partialState: json.RawMessage(`{"read":["a.go","b.go"],"plan":"rewrite B"}`),
			spec: spec(resumed(&schemas.Resume{Question: "Rewrite A or B?", Answer: "B", Options: []string{"A", "B"}, Context: "same signature",
				// The state came as a ref; prepareWorkspace gets it fetched.
				PartialStateRef: &schemas.ObjectRef{URI: "file:///store/blobs/sha256/" + strings.Repeat("ab", 32), SHA256: strings.Repeat("ab", 32), Size: 44},
				History:         []schemas.HistoryEntry{{Round: 1, Question: "Rewrite A or B?", Answer: "B"}}})),
			want: map[string]string{input: "{}\n"}},
		{name: "resumed round with the bare minimum", golden: "resume-minimal.golden.json",
			spec: spec(resumed(&schemas.Resume{Question: "Proceed?", Answer: "yes"})),
			want: map[string]string{input: "{}\n"}},
		{name: "fifo at input.json", spec: spec(nil),
			setup: func(t *testing.T, ws, _ string) {
				if err := os.Mkdir(filepath.Join(ws, ".agora"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Mkfifo(filepath.Join(ws, input), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: ".agora/input.json is a fifo in the workspace"},
		{name: "skill dir is a symlink", spec: spec(nil),
			setup: func(t *testing.T, ws, outside string) {
				if err := os.Mkdir(filepath.Join(ws, ".agora"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(outside, filepath.Join(ws, ".agora/skills")); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "overlay needs-input skill: write .agora/skills/agora-needs-input/SKILL.md: .agora/skills is a symlink"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
			for _, dir := range []string{ws, outside} {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(outside, "own.txt"), []byte("outside"), 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.setup != nil {
				tt.setup(t, ws, outside)
			}
			skillPath, sk := exec.SkillPath, skill
			if tt.skillPath != "" {
				skillPath = tt.skillPath
			}
			if tt.noSkill {
				sk = nil
			}

			var state indentedState
			if len(tt.partialState) > 0 {
				var err error
				if state, err = indentState(tt.partialState); err != nil {
					t.Fatalf("indentState(%s): %v", tt.partialState, err)
				}
			}
			err := prepareWorkspace(ws, tt.spec, nil, skillPath, sk, state)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("prepareWorkspace = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("prepareWorkspace: %v", err)
			}
			if fi, err := os.Lstat(filepath.Join(ws, ".agora")); err != nil || !fi.IsDir() {
				t.Errorf(".agora is %v, %v; want a real directory", fi.Mode(), err)
			}
			for rel, want := range tt.want {
				got, err := os.ReadFile(filepath.Join(ws, rel))
				if err != nil || string(got) != want {
					t.Errorf("%s = %q, %v; want %q", rel, got, err, want)
				}
			}
			for _, rel := range tt.absent {
				if _, err := os.Lstat(filepath.Join(ws, rel)); err == nil {
					t.Errorf("%s exists, want it absent", rel)
				}
			}
			if tt.golden != "" {
				got, err := os.ReadFile(filepath.Join(ws, resume))
				if err != nil {
					t.Fatalf("read resume.json: %v", err)
				}
				golden(t, tt.golden, got)
			}
			diffTree(t, "outside the workspace", readTree(t, outside), map[string]string{"own.txt": "0644 outside"})
		})
	}
}

// TestPrepareWorkspaceOverlayFailure: a bad capability stops the layout
// with its integrity failure, before .agora is written.
func TestPrepareWorkspaceOverlayFailure(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	caps := []capability{{ref: schemas.BundleRef{Name: "evil"}, data: tarball(t, tarEntry{name: "../x", body: "x"})}}
	err := prepareWorkspace(ws, &schemas.DispatchSpec{DispatchID: "d-1"}, caps, exec.SkillPath, []byte("skill"), nil)
	wantOutcome(t, "prepareWorkspace", err, schemas.ReasonIntegrityFailed, `entry "../x"`)
	if _, err := os.Lstat(filepath.Join(ws, ".agora")); err == nil {
		t.Errorf(".agora was written although a capability was refused")
	}
}

// TestResumeJSONMatchesMarshalIndent: resume.json, written around an
// indented partial_state, is byte for byte what json.MarshalIndent of the
// whole file gives.
func TestResumeJSONMatchesMarshalIndent(t *testing.T) {
	t.Parallel()
	states := []string{
		`{"seen":1}`, `{"seen": 1}`, ` {"a" : [1, 2, {"b": null}], "c": {}} ` + "\n", `[]`, `{}`, `null`, `"x"`, `42`, `true`,
		`{"html":"<b>&amp;</b>","line":"a\u2028b","raw":"` + "\u2028\u2029" + `","esc":"\"\\\/\n"}`,
		`{"nested":[[[]],[{}],{"k":[1.5e3,-0,"é"]}]}`,
		string(benchState(20_000)),
	}
	files := []resumeFile{
		{Round: 2, Question: "Keep going?", Answer: "yes", History: []schemas.HistoryEntry{}},
		{Round: 3, Question: "<q>", Answer: "a & b", Options: []string{"a & b", "c"}, Context: "ctx\n",
			History: []schemas.HistoryEntry{{Round: 1, Question: "q1", Answer: "a1"}, {Round: 2, Question: "q2", Answer: "a2"}}},
	}
	for _, f := range files {
		for _, s := range states {
			want := f
			want.PartialState = json.RawMessage(s)
			wantData, err := json.MarshalIndent(want, "", "  ")
			if err != nil {
				t.Fatalf("MarshalIndent with %s: %v", s, err)
			}
			wantData = append(wantData, '\n')
			state, err := indentState([]byte(s))
			if err != nil {
				t.Fatalf("indentState(%s): %v", s, err)
			}
			got, err := resumeJSON(f, state)
			if err != nil {
				t.Fatalf("resumeJSON with %s: %v", s, err)
			}
			if !bytes.Equal(got, wantData) {
				t.Errorf("resumeJSON with %.80s:\n got %.300s\nwant %.300s", s, got, wantData)
			}
		}
	}
	for _, bad := range []string{``, ` `, `{`, `{"a":1}x`, `{"a":1} {}`, `nul`} {
		if _, err := indentState([]byte(bad)); err == nil {
			t.Errorf("indentState(%q) = nil error, want one (not one JSON value)", bad)
		}
	}
}
