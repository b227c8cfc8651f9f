package objcache

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// sumsFile lists an entry's files with their SHA-256 sums, one
// "HEX  NAME" line each; it is written last.
const sumsFile = ".sums"

// create builds the entry dir in a fresh directory beside it, sums its
// files and renames it into place. Where another process placed a whole
// entry first, that one stays and this one is dropped.
func create(dir string, build func(string) error) (err error) {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, ".tmp-"+filepath.Base(dir)+"-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := build(tmp); err != nil {
		return err
	}
	if err := writeSums(tmp); err != nil {
		return err
	}
	return place(tmp, dir)
}

// place renames the built entry tmp to dir, unless a whole entry is there
// already (a racing build's); a damaged one is replaced.
func place(tmp, dir string) error {
	if os.Rename(tmp, dir) == nil {
		return nil
	}
	if verify(dir) == nil {
		return os.RemoveAll(tmp)
	}
	discard(dir)
	return os.Rename(tmp, dir)
}

// discard moves the damaged entry dir aside, so that no reader opens a file
// of it again, and removes it.
func discard(dir string) {
	trash, err := os.MkdirTemp(filepath.Dir(dir), ".trash-")
	if err != nil {
		return
	}
	os.Rename(dir, filepath.Join(trash, "entry"))
	os.RemoveAll(trash)
}

// writeSums writes dir's sums file over every regular file under it.
func writeSums(dir string) error {
	var b bytes.Buffer
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		sum, err := fileSum(path)
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(&b, "%s  %s\n", sum, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		return err
	}
	if b.Len() == 0 {
		return errors.New("the build wrote no files")
	}
	return os.WriteFile(filepath.Join(dir, sumsFile), b.Bytes(), 0o644)
}

// verify checks every file the sums file of dir lists against its sum: an
// error wrapping os.ErrNotExist if there is no entry dir, another if it is
// damaged (no sums, a file missing, short or changed).
func verify(dir string) error {
	if _, err := os.Stat(dir); err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(dir, sumsFile))
	if err != nil {
		return fmt.Errorf("damaged entry: %v", err) // not ErrNotExist: the entry is there
	}
	defer f.Close()
	lines := 0
	sc := bufio.NewScanner(f)
	for ; sc.Scan(); lines++ {
		if err := checkLine(dir, sc.Text()); err != nil {
			return err
		}
	}
	switch {
	case sc.Err() != nil:
		return fmt.Errorf("damaged entry: its sums: %v", sc.Err())
	case lines == 0:
		return errors.New("damaged entry: its sums list no file")
	}
	return nil
}

// checkLine checks one line of a sums file against the file it names.
func checkLine(dir, line string) error {
	want, name, ok := strings.Cut(line, "  ")
	if !ok || !filepath.IsLocal(name) {
		return fmt.Errorf("damaged entry: sums line %q", line)
	}
	got, err := fileSum(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil || got != want {
		return fmt.Errorf("damaged entry: %s does not match its sum", name)
	}
	return nil
}

// fileSum is the hex SHA-256 of the file at path.
func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
