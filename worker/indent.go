package worker

import (
	"bytes"
	"encoding/json"
)

// indentJSON checks that src is exactly one JSON value (white space around
// it allowed) and appends it to dst as json.MarshalIndent makes of a
// json.RawMessage nested one level deep (prefix and indent "  "): <, >, &,
// U+2028 and U+2029 escaped, then indented. Two passes of encoding/json
// where MarshalIndent made three (docs/benchmarks.md has the figures).
func indentJSON(dst, src []byte, prefix, indent string) ([]byte, error) {
	var esc bytes.Buffer
	esc.Grow(len(src))
	json.HTMLEscape(&esc, bytes.TrimSpace(src))
	out := bytes.NewBuffer(dst)
	if err := json.Indent(out, esc.Bytes(), prefix, indent); err != nil {
		return dst, err
	}
	return out.Bytes(), nil
}
