package registry

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agoradev/agora/internal/fsutil"
)

// MaxCapabilityBytes caps a capability's tar: it is copied into every
// dispatch's workspace, so it is meant for skills, scripts and config, not
// data sets.
const MaxCapabilityBytes = 32 << 20

// PackDir packs dir into a tar the same way every time: entries sorted by
// path, owner 0, times zeroed, modes reduced to 0755 (directories and
// executables) or 0644. The same tree gives the same bytes, so the same
// version. Only regular files and directories are allowed; a symlink or a
// device is refused by name, because the worker would refuse it too.
func PackDir(dir string, maxBytes int64) ([]byte, int, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("capability directory: %w", err)
	}
	if !info.IsDir() {
		return nil, 0, fmt.Errorf("capability path %s is not a directory", dir)
	}
	type item struct {
		rel  string
		mode fs.FileMode
		size int64
	}
	var items []item
	var total int64
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.Mode().IsDir():
			items = append(items, item{rel: rel + "/", mode: fi.Mode()})
		case fi.Mode().IsRegular():
			total += fi.Size()
			if total > maxBytes {
				return fmt.Errorf("the files add up to more than %d bytes (a capability is for skills, scripts and config)", maxBytes)
			}
			items = append(items, item{rel: rel, mode: fi.Mode(), size: fi.Size()})
		default:
			return fmt.Errorf("%s is a %s; a capability holds regular files and directories only", rel, fsutil.FileKind(fi.Mode()))
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("pack %s: %w", dir, err)
	}
	sort.Slice(items, func(i, j int) bool { return items[i].rel < items[j].rel })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	files := 0
	for _, it := range items {
		hdr := &tar.Header{Name: it.rel, Mode: 0o644, Format: tar.FormatPAX}
		if it.mode&0o111 != 0 {
			hdr.Mode = 0o755
		}
		if strings.HasSuffix(it.rel, "/") {
			hdr.Typeflag, hdr.Mode = tar.TypeDir, 0o755
			if err := tw.WriteHeader(hdr); err != nil {
				return nil, 0, err
			}
			continue
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, it.size
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, 0, err
		}
		f, err := os.Open(filepath.Join(dir, filepath.FromSlash(it.rel)))
		if err != nil {
			return nil, 0, fmt.Errorf("pack %s: %w", dir, err)
		}
		n, err := io.Copy(tw, io.LimitReader(f, it.size))
		f.Close()
		if err != nil {
			return nil, 0, fmt.Errorf("pack %s: %s: %w", dir, it.rel, err)
		}
		if n != it.size {
			return nil, 0, fmt.Errorf("pack %s: %s changed while it was read", dir, it.rel)
		}
		files++
	}
	if err := tw.Close(); err != nil {
		return nil, 0, err
	}
	return buf.Bytes(), files, nil
}

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
