package main

// The state directory is the driver's only memory, shared by every instance:
//
//	lock                          flock(2)ed around every change, since several processes share the directory
//	volumes/<id>/meta.json        volumeMeta
//	volumes/<id>/data/            a filesystem volume's content, bind-mounted into pods
//	volumes/<id>/block.img        a Block volume: a sparse file, attached to a loop device on publish
//	volumes/<id>/attached/<node>  one file per node the volume is published to; holds the access mode
//	snapshots/<id>/meta.json      snapshotMeta
//	snapshots/<id>/data/ or block.img   a full copy of the source volume's content
//
// New volumes and snapshots are assembled in a ".tmp-" directory and renamed into place, so a directory
// named by an id is always complete; deletions are renamed away before they are removed, for the same reason.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/sys/unix"
)

type volumeMeta struct {
	Name          string         `json:"name"`
	CapacityBytes int64          `json:"capacity_bytes"`
	Block         bool           `json:"block"`
	ContentSource *contentSource `json:"content_source,omitempty"`
	Created       string         `json:"created"` // RFC 3339
}

type contentSource struct {
	Kind string `json:"kind"` // "snapshot" or "volume"
	ID   string `json:"id"`
}

type snapshotMeta struct {
	Name               string `json:"name"`
	SourceVolumeID     string `json:"source_volume_id"`
	SizeBytes          int64  `json:"size_bytes"`
	CreationTimeUnixNs int64  `json:"creation_time_unix_ns"`
	Block              bool   `json:"block"` // whether the copy is a block.img, so a restore knows what it makes
}

type store struct {
	dir string
}

func openStore(dir string) (*store, error) {
	for _, sub := range []string{"volumes", "snapshots"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	return &store{dir: dir}, nil
}

// lock takes the state directory's lock; call the returned function to release it. flock is released by the
// kernel when the process dies, so a killed instance never leaves the lab locked.
func (s *store) lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock state dir: %w", err)
	}
	return func() { f.Close() }, nil
}

// Ids are derived from names so that a retried create finds what the first attempt made, even in another
// process. 20 hex digits (80 bits) make a collision between two names in a lab unthinkable.
func idFor(prefix, name string) string {
	sum := sha256.Sum256([]byte(name))
	return prefix + hex.EncodeToString(sum[:])[:20]
}

var idPattern = regexp.MustCompile(`^[vs]-[0-9a-f]{20}$`)

// validID keeps ids that come from outside from naming anything but a volume or snapshot directory.
func validID(prefix, id string) bool {
	return strings.HasPrefix(id, prefix) && idPattern.MatchString(id)
}

func (s *store) volumeDir(id string) string   { return filepath.Join(s.dir, "volumes", id) }
func (s *store) snapshotDir(id string) string { return filepath.Join(s.dir, "snapshots", id) }

// readVolume returns nil, nil when there is no such volume.
func (s *store) readVolume(id string) (*volumeMeta, error) {
	if !validID("v-", id) {
		return nil, nil
	}
	var m volumeMeta
	if found, err := readJSON(filepath.Join(s.volumeDir(id), "meta.json"), &m); !found || err != nil {
		return nil, err
	}
	return &m, nil
}

// readSnapshot returns nil, nil when there is no such snapshot.
func (s *store) readSnapshot(id string) (*snapshotMeta, error) {
	if !validID("s-", id) {
		return nil, nil
	}
	var m snapshotMeta
	if found, err := readJSON(filepath.Join(s.snapshotDir(id), "meta.json"), &m); !found || err != nil {
		return nil, err
	}
	return &m, nil
}

// attachments maps each node a volume is published to onto the access mode it was published with.
func (s *store) attachments(id string) (map[string]string, error) {
	dir := filepath.Join(s.volumeDir(id), "attached")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	} else if err != nil {
		return nil, err
	}
	nodes := map[string]string{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			continue
		}
		mode, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		nodes[e.Name()] = strings.TrimSpace(string(mode))
	}
	return nodes, nil
}

func readJSON(path string, v any) (bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return true, nil
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(data, '\n'))
}

// writeFileAtomic writes a temporary file beside path and renames it over path, so a reader in another
// process sees the old content or the new, never half of it.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // fails harmlessly once renamed
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// newTemp makes a directory in volumes/ or snapshots/ to assemble a new volume or snapshot in.
func (s *store) newTemp(kind string) (string, error) {
	return os.MkdirTemp(filepath.Join(s.dir, kind), ".tmp-")
}

// removeStaleTemps removes what a crashed create or delete left. Every create and delete holds the lock from
// start to end, so under the lock any ".tmp-" directory is left over.
func (s *store) removeStaleTemps() error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	for _, kind := range []string{"volumes", "snapshots"} {
		stale, _ := filepath.Glob(filepath.Join(s.dir, kind, ".tmp-*"))
		for _, dir := range stale {
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeDir renames dir away first, so that the id disappears at once even if removing a large tree fails.
func (s *store) removeDir(kind, dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	trash, err := s.newTemp(kind)
	if err != nil {
		return err
	}
	if err := os.Rename(dir, filepath.Join(trash, "x")); err != nil {
		os.Remove(trash)
		return err
	}
	return os.RemoveAll(trash)
}

// copyContent copies a volume's or snapshot's content (data/ or block.img) from one directory into another.
// cp -a keeps owners, modes, times, links and holes (a mostly empty block.img stays sparse).
func copyContent(src, dst string, block bool) error {
	var cmd *exec.Cmd
	if block {
		cmd = exec.Command("cp", "-a", "--sparse=always", filepath.Join(src, "block.img"), filepath.Join(dst, "block.img"))
	} else {
		if err := os.MkdirAll(filepath.Join(dst, "data"), 0o777); err != nil {
			return err
		}
		cmd = exec.Command("cp", "-a", filepath.Join(src, "data")+"/.", filepath.Join(dst, "data"))
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %w: %s", cmd.Args, err, strings.TrimSpace(string(out)))
	}
	return nil
}
