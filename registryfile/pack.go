package registryfile

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agoradev/agora/internal/fsutil"
)

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
