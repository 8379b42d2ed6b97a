package registry

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// CheckTar checks an uploaded capability the way the worker will unpack it:
// a plain tar of regular files and directories with relative, clean paths
// inside the workspace, at most maxBytes. It returns the number of files.
func CheckTar(data []byte, maxBytes int64) (int, error) {
	if int64(len(data)) > maxBytes+(1<<20) {
		return 0, fmt.Errorf("capability archive is %d bytes; at most %d", len(data), maxBytes)
	}
	tr := tar.NewReader(bytes.NewReader(data))
	files := 0
	var total int64
	seen := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("capability archive: not a tar: %w", err)
		}
		name := strings.TrimSuffix(hdr.Name, "/")
		if name == "" || path.IsAbs(name) || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") {
			return 0, fmt.Errorf("capability archive: path %q must be relative and clean, inside the workspace", hdr.Name)
		}
		if seen[name] {
			return 0, fmt.Errorf("capability archive: %s appears twice", name)
		}
		seen[name] = true
		switch hdr.Typeflag {
		case tar.TypeDir:
		case tar.TypeReg:
			files++
			total += hdr.Size
			if total > maxBytes {
				return 0, fmt.Errorf("capability archive: the files add up to more than %d bytes", maxBytes)
			}
		default:
			return 0, fmt.Errorf("capability archive: %s is not a regular file or directory", name)
		}
	}
	return files, nil
}
