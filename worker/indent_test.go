package worker

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// referenceIndent is what indentJSON stands in for: json.HTMLEscape, then
// json.Indent, with json.Valid's verdict.
func referenceIndent(src []byte) ([]byte, bool) {
	if !json.Valid(src) {
		return nil, false
	}
	var esc, out bytes.Buffer
	json.HTMLEscape(&esc, bytes.TrimSpace(src))
	if err := json.Indent(&out, esc.Bytes(), "  ", "  "); err != nil {
		return nil, false
	}
	return out.Bytes(), true
}

var indentSeeds = []string{
	`{"seen":1}`, ` {"a" : [1, 2, {"b": null}], "c": {}, "d": [ ]} ` + "\n", `[]`, `{}`, `null`, `"x"`, `42`, `true`, `false`,
	`{"html":"<b>&amp;</b>","esc":"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00","raw":"` + "\u2028\u2029é\xff" + `"}`,
	`{"nested":[[[]],[{}],{"k":[1.5e3,-0,0.25,1E+2,-12e-3,"é"]}]}`,
	`-`, `01`, `1.`, `1e`, `1e+`, `.5`, `+1`, `tru`, `nul`, `[1,]`, `{"a":1,}`, `{"a"}`, `{a:1}`, `[1 2]`, `"\x"`, `"\u12"`, `"\u12g4"`,
	"\"a\x01\"", `"unterminated`, `[`, `{`, `{"a":`, `{"a":1`, `[1,2`, ``, ` `, `{"a":1}x`, `{} {}`, `[1]]`, "\t[\r\n]\n",
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
}

// TestIndentJSON: indentJSON gives the standard library's output and
// verdict (json.Valid's) on every seed.
func TestIndentJSON(t *testing.T) {
	t.Parallel()
	for _, seed := range append(indentSeeds, string(benchState(50_000))) {
		checkIndent(t, []byte(seed))
	}
}

func checkIndent(t *testing.T, src []byte) {
	t.Helper()
	want, ok := referenceIndent(src)
	got, err := indentJSON(nil, src, "  ", "  ")
	switch {
	case ok && err != nil:
		t.Errorf("indentJSON(%.100q) = error %v, want the value accepted", src, err)
	case !ok && err == nil:
		t.Errorf("indentJSON(%.100q) accepted it, want an error (not one JSON value)", src)
	case ok && !bytes.Equal(got, want):
		t.Errorf("indentJSON(%.100q)\n got %.300q\nwant %.300q", src, got, want)
	}
}
