package storage_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/agoradev/agora/internal/storage"
)

// A bundle travels as a BlobRef: the orchestrator stores it, the worker
// resolves the URI against its own store and reads it back verified.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "agora-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s, err := storage.Open(ctx, "file://"+dir, storage.Options{})
	if err != nil {
		log.Fatal(err)
	}
	key, ref, err := storage.PutBlob(ctx, s, strings.NewReader("#!/bin/sh\necho setup\n"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(key)

	// In the worker: ref arrived in the dispatch spec.
	k, err := storage.ResolveURI(s, ref.URI)
	if err != nil {
		log.Fatal(err)
	}
	data, err := storage.GetVerified(ctx, s, k, ref.SHA256, 1<<20)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d bytes verified: %q\n", len(data), data)
	// Output:
	// blobs/sha256/e8a126dcad5ac3065868c43a164b4d646a21be1fcbed96156477c465498f4425
	// 21 bytes verified: "#!/bin/sh\necho setup\n"
}
