package storage

import "github.com/aws/aws-sdk-go-v2/aws"

// SetListPageSize lowers the S3 backend's page size so that tests exercise
// ListObjectsV2 pagination without thousands of objects.
func SetListPageSize(s Store, n int32) { s.(*s3Store).listPageSize = n }

// S3Settings is what Open resolved for an s3:// URI.
type S3Settings struct {
	Bucket, Prefix, Endpoint, Region string
	PathStyle                        bool
}

func S3SettingsOf(s Store) S3Settings {
	st := s.(*s3Store)
	o := st.client.Options()
	return S3Settings{
		Bucket:    st.loc.bucket,
		Prefix:    st.loc.prefix,
		Endpoint:  aws.ToString(o.BaseEndpoint),
		Region:    o.Region,
		PathStyle: o.UsePathStyle,
	}
}
