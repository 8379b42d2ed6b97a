package storage

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Open returns the Store that uri names:
//
//	file:///abs/dir                 a directory, created if absent
//	s3://bucket                     a bucket
//	s3://bucket/some/prefix         keys live under some/prefix/
//
// Query parameters on s3 URIs override opts.S3:
// ?endpoint=http://127.0.0.1:9000&region=us-east-1&path_style=true.
// Open does not contact S3: a missing bucket or bad credentials show on first use.
func Open(ctx context.Context, uri string, opts Options) (Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	u, err := url.Parse(uri)
	if err != nil {
		return nil, uriError(uri, "%v", err)
	}
	switch u.Scheme {
	case "file":
		dir, err := parseFileURI(uri, u)
		if err != nil {
			return nil, err
		}
		return openFS(dir, opts.Logger, opts)
	case "s3":
		loc, s3opts, err := parseS3URI(uri, u, opts.S3)
		if err != nil {
			return nil, err
		}
		s, err := openS3(ctx, loc, s3opts, opts.Logger)
		if err != nil {
			return nil, err
		}
		s.spool = opts.SpoolDir
		return s, nil
	case "":
		return nil, uriError(uri, "missing scheme (want file:///abs/dir or s3://bucket/prefix)")
	default:
		return nil, uriError(uri, "unsupported scheme %q (want file or s3)", u.Scheme)
	}
}

func uriError(uri, format string, args ...any) error {
	return fmt.Errorf("storage uri %q: %s", uri, fmt.Sprintf(format, args...))
}

func parseFileURI(uri string, u *url.URL) (string, error) {
	switch {
	case u.Opaque != "":
		return "", uriError(uri, "relative path %q (want file:///abs/dir)", u.Opaque)
	case u.Host != "" && u.Host != "localhost":
		return "", uriError(uri, "host %q not supported (want file:///abs/dir)", u.Host)
	case u.User != nil:
		return "", uriError(uri, "user info not supported")
	case u.RawQuery != "" || u.ForceQuery:
		return "", uriError(uri, "query not supported on file URIs")
	case u.Fragment != "":
		return "", uriError(uri, "fragment not supported")
	case !strings.HasPrefix(u.Path, "/"):
		return "", uriError(uri, "missing directory (want file:///abs/dir)")
	}
	return path.Clean(u.Path), nil
}

// s3Location is where a Store lives inside S3.
type s3Location struct {
	bucket string
	prefix string // "" or ends with "/"
}

func parseS3URI(uri string, u *url.URL, opts S3Options) (s3Location, S3Options, error) {
	var loc s3Location
	switch {
	case u.Opaque != "" || u.Host == "":
		return loc, opts, uriError(uri, "missing bucket (want s3://bucket/optional/prefix)")
	case u.User != nil:
		return loc, opts, uriError(uri, "user info not supported (credentials come from options or the AWS chain)")
	case u.Port() != "":
		return loc, opts, uriError(uri, "the host is a bucket name, not an endpoint (use ?endpoint=)")
	case u.Fragment != "":
		return loc, opts, uriError(uri, "fragment not supported")
	}
	loc.bucket = u.Host
	if reason := bucketProblem(loc.bucket); reason != "" {
		return loc, opts, uriError(uri, "bucket %q: %s", loc.bucket, reason)
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		if reason := keyProblem(p); reason != "" {
			return loc, opts, uriError(uri, "prefix %q: %s", p, reason)
		}
		loc.prefix = p + "/"
	}

	q := u.Query()
	var unknown []string
	for name, values := range q {
		if len(values) != 1 {
			return loc, opts, uriError(uri, "query parameter %q given %d times", name, len(values))
		}
		v := values[0]
		switch name {
		case "endpoint":
			e, err := url.Parse(v)
			if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
				return loc, opts, uriError(uri, "endpoint %q: want http(s)://host[:port]", v)
			}
			opts.Endpoint = v
		case "region":
			if v == "" {
				return loc, opts, uriError(uri, "empty region")
			}
			opts.Region = v
		case "path_style":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return loc, opts, uriError(uri, "path_style %q: want true or false", v)
			}
			opts.PathStyle = &b
		default:
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		// Rejected rather than ignored: a typo like ?endpiont= would otherwise
		// silently send traffic to AWS.
		slices.Sort(unknown)
		return loc, opts, uriError(uri, "unknown query parameter(s) %s (want endpoint, region, path_style)", strings.Join(unknown, ", "))
	}
	return loc, opts, nil
}

// bucketProblem applies the S3 bucket naming rules that catch typos early:
// 3-63 characters of lower-case letters, digits, '.', '-', starting and ending
// with a letter or digit.
func bucketProblem(b string) string {
	if len(b) < 3 || len(b) > 63 {
		return "want 3 to 63 characters"
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		alnum := (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
		if !alnum && c != '.' && c != '-' {
			return "want lower-case letters, digits, '.' and '-'"
		}
		if (i == 0 || i == len(b)-1) && !alnum {
			return "must start and end with a letter or digit"
		}
	}
	return ""
}
