package web

import (
	"net/url"
	"testing"
)

// TestLocalPath: a redirect target is kept to this site's own paths
// whatever characters it holds — browsers drop tabs and newlines and read
// a backslash as a slash before they resolve a Location.
func TestLocalPath(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"/tasks/t-1", "/tasks/t-1"},
		{"/ui/", "/ui/"},
		{"/?state=failed&label=a%3Db", "/?state=failed&label=a%3Db"},
		{"", "/"},
		{"tasks/t-1", "/"},
		{"//evil.example/", "/"},
		{"/\t/evil.example/x", "/"},
		{"/\n/evil.example", "/"},
		{"/\r\n/evil.example", "/"},
		{"/\t\\evil.example", "/"},
		{"/\\evil.example", "/"},
		{"\\\\evil.example", "/"},
		{"/%09/evil.example/x", "/%09/evil.example/x"}, // a query-escaped tab stays escaped: a path on this site
		{"/%2F%2Fevil.example", "/evil.example"},
		{"/ui/../..//evil.example", "/evil.example"},
		{"/./ /evil.example", "/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"/\u00a0/evil.example", "/"},
		{"/\u2028/evil.example", "/"},
		{"//user@evil.example", "/"},
	}
	for _, tt := range tests {
		got := localPath(tt.in)
		if got != tt.want {
			t.Errorf("localPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if u, err := url.Parse(got); err != nil || u.Host != "" || u.Scheme != "" || len(got) > 1 && got[1] == '/' {
			t.Errorf("localPath(%q) = %q: not a path of this site", tt.in, got)
		}
	}
}
