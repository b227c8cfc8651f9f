package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fibergen/fibergen/internal/fileout"
	"github.com/fibergen/fibergen/pipeline"
)

// writeUnits writes every unit's directory all or nothing: each unit's
// files go into a new directory beside its own (fileout.Dir), with the
// files of the old directory that the build does not make carried over;
// only when every unit's new directory is complete and synced is each
// swapped into place. A failure before the swaps leaves every old directory
// as it was and no new one behind.
func writeUnits(out string, units []unitFiles) (err error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("-o %s: %w", out, fileout.RootCause(err))
	}
	var dirs []*fileout.Dir
	defer func() {
		for _, d := range dirs {
			err = errors.Join(err, d.Abort()) // after Commit, nothing to do
		}
	}()
	for _, u := range units {
		d, err := prepareUnit(u)
		if d != nil {
			dirs = append(dirs, d)
		}
		if err != nil {
			return err
		}
	}
	for i, d := range dirs {
		if err := d.Commit(); err != nil {
			return fmt.Errorf("cannot put %s in place: %w", units[i].dir, err)
		}
	}
	return nil
}

// prepareUnit writes u's files into a new directory beside u.dir, carries
// the old directory's other files into it and syncs it. The Dir it returns
// is to be committed or aborted, also on an error.
func prepareUnit(u unitFiles) (*fileout.Dir, error) {
	d, err := fileout.NewDir(u.dir)
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %w", u.dir, err)
	}
	for _, f := range u.files {
		if err := writeUnitFile(d, f); err != nil {
			return d, fmt.Errorf("cannot write %s: %w", filepath.Join(d.Target(), f.Name), fileout.RootCause(err))
		}
	}
	if err := d.Seal(); err != nil {
		return d, fmt.Errorf("cannot carry the other files of %s into the rebuilt directory: %w", d.Target(), fileout.RootCause(err))
	}
	return d, nil
}

// writeUnitFile writes one file of a unit into its new directory; a
// variable, so that the tests can make a write fail midway.
var writeUnitFile = func(d *fileout.Dir, f pipeline.File) error {
	return d.WriteFile(f.Name, 0o644, f.Data)
}
