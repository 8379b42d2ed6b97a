package runner

import "path/filepath"

func (r *Runner) cancelDir(id string) string { return filepath.Join(r.cfg.DataDir, "cancel", id) }
