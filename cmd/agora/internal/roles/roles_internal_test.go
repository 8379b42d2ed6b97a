package roles

import (
	"testing"

	"github.com/agoradev/agora/internal/storage"
)

// TestS3Options: S3 storage takes the credentials and region of the
// environ agora was started with, not only the process's.
func TestS3Options(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  []string
		want storage.S3Options
	}{
		{"none", nil, storage.S3Options{}},
		{"static", []string{"AWS_ACCESS_KEY_ID=a", "AWS_SECRET_ACCESS_KEY=s", "AWS_SESSION_TOKEN=t", "AWS_REGION=eu-west-1"},
			storage.S3Options{AccessKeyID: "a", SecretAccessKey: "s", SessionToken: "t", Region: "eu-west-1"}},
		{"half a key pair is the default chain's", []string{"AWS_ACCESS_KEY_ID=a", "AWS_DEFAULT_REGION=us-east-2"},
			storage.S3Options{Region: "us-east-2"}},
	} {
		if got := s3Options(tc.env); got != tc.want {
			t.Errorf("%s: s3Options(%q) = %+v, want %+v", tc.name, tc.env, got, tc.want)
		}
	}
}
