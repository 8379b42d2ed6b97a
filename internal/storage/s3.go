package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
)

const defaultRegion = "us-east-1"

// s3Store keeps each object at bucket/prefix+key.
type s3Store struct {
	client *s3.Client
	loc    s3Location
	log    *slog.Logger
	// listPageSize is MaxKeys for ListObjectsV2; 0 means the server's default
	// (1000). Tests lower it to exercise pagination.
	listPageSize int32
	spool        string // Options.SpoolDir
}

func (s *s3Store) spoolDir() string { return s.spool }

var (
	_ Store   = (*s3Store)(nil)
	_ Checker = (*s3Store)(nil)
)

func openS3(ctx context.Context, loc s3Location, o S3Options, log *slog.Logger) (*s3Store, error) {
	loadOpts := []func(*config.LoadOptions) error{
		// The SDK logs through slog like the rest of agora instead of printing to stderr.
		config.WithLogger(logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
			level := slog.LevelDebug
			if c == logging.Warn {
				level = slog.LevelWarn
			}
			log.Log(context.Background(), level, "aws sdk: "+fmt.Sprintf(format, v...))
		})),
	}
	if o.Region != "" {
		loadOpts = append(loadOpts, config.WithRegion(o.Region))
	}
	if o.AccessKeyID != "" || o.SecretAccessKey != "" {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(o.AccessKeyID, o.SecretAccessKey, o.SessionToken)))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("open storage s3://%s: load aws config: %w", loc.bucket, err)
	}
	if cfg.Region == "" {
		cfg.Region = defaultRegion
	}
	client := s3.NewFromConfig(cfg, func(so *s3.Options) {
		if o.HTTPClient != nil {
			// Set here rather than through config.WithHTTPClient, which fails on a
			// plain *http.Client when AWS_CA_BUNDLE is set: the caller's client,
			// and its TLS settings, are used as given.
			so.HTTPClient = o.HTTPClient
		}
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		// so.BaseEndpoint also holds an endpoint the SDK found in the environment
		// (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL). Such S3-compatible servers
		// rarely resolve bucket sub-domains, hence path-style by default.
		so.UsePathStyle = so.BaseEndpoint != nil
		if o.PathStyle != nil {
			so.UsePathStyle = *o.PathStyle
		}
	})
	s := &s3Store{client: client, loc: loc, log: log}
	opts := client.Options()
	log.Debug("storage opened", "backend", "s3", "uri", s.URI(""),
		"endpoint", aws.ToString(opts.BaseEndpoint), "region", opts.Region, "path_style", opts.UsePathStyle)
	return s, nil
}

func (s *s3Store) URI(key string) string {
	return (&url.URL{Scheme: "s3", Host: s.loc.bucket, Path: "/" + s.loc.prefix + key}).String()
}

func (s *s3Store) objectKey(key string) *string {
	return aws.String(s.loc.prefix + key)
}

// isNotFound maps S3's ways of saying "no such object". HeadObject has no body,
// so a 404 from it carries no code and a missing bucket looks the same there.
func isNotFound(err error) bool {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return true
		case "NoSuchBucket":
			return false
		}
	}
	var respErr *awshttp.ResponseError
	return errors.As(err, &respErr) && respErr.HTTPStatusCode() == 404
}

func (s *s3Store) Put(ctx context.Context, key string, r io.Reader) (err error) {
	if err := ValidateKey(key); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("put %s: %w", s.URI(key), err)
		}
	}()
	body, size, cleanup, err := s.seekable(ctx, r)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := cleanup(); cerr != nil {
			s.log.Warn("storage: remove spool file", "error", cerr)
			err = errors.Join(err, cerr)
		}
	}()
	// PutObject is atomic in S3: the object appears whole or not at all.
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.loc.bucket),
		Key:           s.objectKey(key),
		Body:          body,
		ContentLength: aws.Int64(size),
	})
	return err
}

// seekable returns r as a ReadSeeker of known size. The SDK must read the body
// more than once (payload hash for the signature, checksum, retries), so a
// stream is first spooled to a temp file: memory stays bounded whatever the size.
func (s *s3Store) seekable(ctx context.Context, r io.Reader) (io.ReadSeeker, int64, func() error, error) {
	noop := func() error { return nil }
	if err := ctx.Err(); err != nil {
		return nil, 0, noop, err
	}
	if rs, ok := r.(io.ReadSeeker); ok {
		// A pipe or a terminal is an *os.File too; only trust a Seek that works.
		if start, err := rs.Seek(0, io.SeekCurrent); err == nil {
			end, err := rs.Seek(0, io.SeekEnd)
			if err != nil {
				return nil, 0, noop, err
			}
			if _, err := rs.Seek(start, io.SeekStart); err != nil {
				return nil, 0, noop, err
			}
			return rs, end - start, noop, nil
		}
	}
	f, err := CreateTemp(s, "agora-s3-put-*")
	if err != nil {
		return nil, 0, noop, fmt.Errorf("spool: %w", err)
	}
	cleanup := func() error {
		cerr := f.Close()
		if err := os.Remove(f.Name()); err != nil {
			return fmt.Errorf("remove spool file: %w", err)
		}
		if cerr != nil && !errors.Is(cerr, os.ErrClosed) {
			return fmt.Errorf("close spool file: %w", cerr)
		}
		return nil
	}
	size, err := io.Copy(f, ctxReader{ctx, r})
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		return nil, 0, noop, errors.Join(err, cleanup())
	}
	return f, size, cleanup, nil
}

func (s *s3Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := ValidateKey(key); err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(s.loc.bucket),
		Key:    s.objectKey(key),
	})
	if isNotFound(err) {
		return nil, fmt.Errorf("get %s: %w", s.URI(key), ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", s.URI(key), err)
	}
	return out.Body, nil
}

func (s *s3Store) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ValidateKey(key); err != nil {
		return ObjectInfo{}, fmt.Errorf("stat: %w", err)
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket: aws.String(s.loc.bucket),
		Key:    s.objectKey(key),
	})
	if isNotFound(err) {
		return ObjectInfo{}, fmt.Errorf("stat %s: %w", s.URI(key), ErrNotFound)
	}
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("stat %s: %w", s.URI(key), err)
	}
	return ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength)}, nil
}

func (s *s3Store) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket: aws.String(s.loc.bucket),
		Key:    s.objectKey(key),
	})
	// S3 answers 204 for a missing key; some compatible servers say 404.
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("delete %s: %w", s.URI(key), err)
	}
	return nil
}

func (s *s3Store) List(ctx context.Context, prefix string) ([]string, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	in := &s3.ListObjectsV2Input{
		Bucket: aws.String(s.loc.bucket),
		Prefix: aws.String(s.loc.prefix + prefix),
	}
	if s.listPageSize > 0 {
		in.MaxKeys = aws.Int32(s.listPageSize)
	}
	keys := []string{}
	pages := s3.NewListObjectsV2Paginator(s.client, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", s.URI(prefix), err)
		}
		for _, obj := range page.Contents {
			key := strings.TrimPrefix(aws.ToString(obj.Key), s.loc.prefix)
			// Objects written by other tools may have names no key can have
			// (e.g. "dir/" markers); listing them would only make Get fail.
			if err := ValidateKey(key); err != nil {
				s.log.Debug("storage: list skips object", "uri", s.URI(key), "error", err)
				continue
			}
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// ErrNoBucket means the storage's S3 bucket does not exist.
var ErrNoBucket = errors.New("the bucket does not exist")

// Check asks S3 whether the bucket exists (HeadBucket), so a role fails at
// start instead of at its first round. A missing bucket is ErrNoBucket,
// with what to do; a refusal (no s3:ListBucket) or a network error is
// returned as it is, for the caller to warn about.
func (s *s3Store) Check(ctx context.Context) error {
	_, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.loc.bucket)})
	if err == nil {
		return nil
	}
	var nf *types.NotFound
	var nsb *types.NoSuchBucket
	if errors.As(err, &nf) || errors.As(err, &nsb) {
		return fmt.Errorf("storage %s: bucket s3://%s: %w: create it (e.g. aws s3 mb s3://%s) or fix --storage", s.URI(""), s.loc.bucket, ErrNoBucket, s.loc.bucket)
	}
	return fmt.Errorf("storage %s: check the bucket: %w", s.URI(""), err)
}
