package schemas

import (
	"strings"
	"testing"
)

// TestOutputFilter: the sub-agent's lines pass, agora's marked lines only
// with All (and without the mark), whatever the chunks.
func TestOutputFilter(t *testing.T) {
	t.Parallel()
	const m = string(OutputMark)
	out := m + `{"kind":"dispatch.started","mac":"aa"}` + "\ncompiling\n" + `{"kind":"dispatch.finished","mac":"00"}` + "\n" + m + "time=x level=INFO msg=done\n" + "␞not agora's\nno newline"
	tests := []struct {
		all  bool
		want string
	}{
		{false, "compiling\n" + `{"kind":"dispatch.finished","mac":"00"}` + "\n␞not agora's\nno newline"},
		{true, `{"kind":"dispatch.started","mac":"aa"}` + "\ncompiling\n" + `{"kind":"dispatch.finished","mac":"00"}` + "\ntime=x level=INFO msg=done\n␞not agora's\nno newline"},
	}
	for _, tt := range tests {
		for _, size := range []int{1, 3, 7, len(out)} {
			var b strings.Builder
			f := &OutputFilter{W: &b, All: tt.all}
			for i := 0; i < len(out); i += size {
				chunk := out[i:min(i+size, len(out))]
				if n, err := f.Write([]byte(chunk)); n != len(chunk) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if b.String() != tt.want {
				t.Errorf("all=%v in %d-byte chunks = %q, want %q", tt.all, size, b.String(), tt.want)
			}
		}
	}
}
