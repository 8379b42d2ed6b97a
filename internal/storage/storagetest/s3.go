package storagetest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/agoradev/agora/internal/storage"
)

// S3 is an S3 endpoint on loopback (gofakes3, in memory) with one bucket,
// for tests that need S3 storage reachable from this host and from a
// container on its network. It notes the access key of every request, so
// a test can tell whose credentials reached it. It is closed in t.Cleanup.
type S3 struct {
	// URL is the endpoint, http://127.0.0.1:PORT.
	URL string
	// Bucket is the one bucket.
	Bucket string

	mu   sync.Mutex
	keys map[string]int
}

var credentialRE = regexp.MustCompile(`Credential=([A-Z0-9]+)/`)

// StartS3 starts an S3 endpoint with the bucket "agora".
func StartS3(t testing.TB) *S3 {
	t.Helper()
	backend := s3mem.New()
	s := &S3{Bucket: "agora", keys: map[string]int{}}
	if err := backend.CreateBucket(s.Bucket); err != nil {
		t.Fatal(err)
	}
	h := gofakes3.New(backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m := credentialRE.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
			s.mu.Lock()
			s.keys[m[1]]++
			s.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// URI is the storage URI of prefix in the bucket, naming the endpoint.
func (s *S3) URI(prefix string) string {
	return "s3://" + s.Bucket + "/" + prefix + "?endpoint=" + s.URL
}

// Open opens prefix as a store with static credentials of accessKeyID.
func (s *S3) Open(t testing.TB, prefix, accessKeyID string) storage.Store {
	t.Helper()
	store, err := storage.Open(context.Background(), s.URI(prefix), storage.Options{
		S3: storage.S3Options{AccessKeyID: accessKeyID, SecretAccessKey: "s", Region: "us-east-1"}})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// RequestsBy is how many requests were signed with accessKeyID.
func (s *S3) RequestsBy(accessKeyID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[accessKeyID]
}
