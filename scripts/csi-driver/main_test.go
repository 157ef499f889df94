package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

const mib = 1 << 20

var ctx = context.Background()

func newController(t *testing.T) *controllerServer {
	t.Helper()
	st, err := openStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &controllerServer{st: st}
}

func capability(block bool, mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
	c := &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode}}
	if block {
		c.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
	} else {
		c.AccessType = &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}}
	}
	return c
}

var rwo = csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER

func createVolume(t *testing.T, c *controllerServer, name string, size int64, block bool, src *csi.VolumeContentSource) *csi.Volume {
	t.Helper()
	resp, err := c.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name:                name,
		CapacityRange:       &csi.CapacityRange{RequiredBytes: size},
		VolumeCapabilities:  []*csi.VolumeCapability{capability(block, rwo)},
		VolumeContentSource: src,
	})
	if err != nil {
		t.Fatalf("CreateVolume %s: %v", name, err)
	}
	return resp.Volume
}

func wantCode(t *testing.T, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("got %v (%v), want %v", got, err, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func publish(c *controllerServer, id, node string, block bool, mode csi.VolumeCapability_AccessMode_Mode) error {
	_, err := c.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
		VolumeId: id, NodeId: node, VolumeCapability: capability(block, mode)})
	return err
}

func unpublish(c *controllerServer, id, node string) error {
	_, err := c.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: id, NodeId: node})
	return err
}

func TestCreateVolumeIdempotent(t *testing.T) {
	c := newController(t)
	v1 := createVolume(t, c, "pvc-1", 10*mib, false, nil)
	v2 := createVolume(t, c, "pvc-1", 10*mib, false, nil)
	if v1.VolumeId != v2.VolumeId || v1.CapacityBytes != 10*mib || !strings.HasPrefix(v1.VolumeId, "v-") {
		t.Fatalf("not idempotent: %v vs %v", v1, v2)
	}
	m, err := c.st.readVolume(v1.VolumeId)
	must(t, err)
	if m == nil || m.Name != "pvc-1" || m.CapacityBytes != 10*mib || m.Block || m.Created == "" {
		t.Fatalf("meta.json: %+v", m)
	}
	info, err := os.Stat(filepath.Join(c.st.volumeDir(v1.VolumeId), "data"))
	must(t, err)
	if !info.IsDir() || info.Mode().Perm() != 0o777 {
		t.Fatalf("data dir: %v", info.Mode())
	}
	// The same name asking for more than exists is a conflict, not a second volume.
	_, err = c.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", CapacityRange: &csi.CapacityRange{RequiredBytes: 20 * mib},
		VolumeCapabilities: []*csi.VolumeCapability{capability(false, rwo)}})
	wantCode(t, err, codes.AlreadyExists)
	_, err = c.CreateVolume(ctx, &csi.CreateVolumeRequest{VolumeCapabilities: []*csi.VolumeCapability{capability(false, rwo)}})
	wantCode(t, err, codes.InvalidArgument)
	if v := createVolume(t, c, "pvc-default", 0, false, nil); v.CapacityBytes != defaultCapacity {
		t.Fatalf("default capacity %d", v.CapacityBytes)
	}
	if entries, _ := os.ReadDir(filepath.Join(c.st.dir, "volumes")); len(entries) != 2 {
		t.Fatalf("want exactly 2 volume dirs (no temporaries left), got %v", entries)
	}
}

func TestAttachRules(t *testing.T) {
	c := newController(t)
	id := createVolume(t, c, "pvc-attach", mib, false, nil).VolumeId

	wantCode(t, publish(c, "v-00000000000000000000", "node-a", false, rwo), codes.NotFound)
	must(t, publish(c, id, "node-a", false, rwo))
	must(t, publish(c, id, "node-a", false, rwo)) // idempotent for the same node
	if _, err := os.Stat(filepath.Join(c.st.volumeDir(id), "attached", "node-a")); err != nil {
		t.Fatal(err)
	}
	// A single-node volume is like a cloud disk: it attaches to one node at a time.
	for _, mode := range []csi.VolumeCapability_AccessMode_Mode{rwo, csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER, csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER} {
		wantCode(t, publish(c, id, "node-b", false, mode), codes.FailedPrecondition)
	}
	_, err := c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
	wantCode(t, err, codes.FailedPrecondition)

	must(t, unpublish(c, id, "node-a"))
	must(t, unpublish(c, id, "node-a")) // idempotent
	must(t, publish(c, id, "node-b", false, rwo))
	must(t, unpublish(c, id, "node-b"))

	// Multi-node access modes may attach to several nodes.
	must(t, publish(c, id, "node-a", false, csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER))
	must(t, publish(c, id, "node-b", false, csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER))
	must(t, unpublish(c, id, "")) // no node: every node
	if nodes, _ := c.st.attachments(id); len(nodes) != 0 {
		t.Fatalf("still attached: %v", nodes)
	}

	_, err = c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
	must(t, err)
	_, err = c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
	must(t, err)                        // idempotent
	must(t, unpublish(c, id, "node-a")) // a missing volume is fine
	if _, err := os.Stat(c.st.volumeDir(id)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("volume dir still there: %v", err)
	}
}

func TestSnapshotRestoreClone(t *testing.T) {
	c := newController(t)
	vol := createVolume(t, c, "pvc-src", 5*mib, false, nil)
	data := filepath.Join(c.st.volumeDir(vol.VolumeId), "data")
	must(t, os.MkdirAll(filepath.Join(data, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(data, "sub", "file"), []byte("before snapshot"), 0o640))
	must(t, os.Symlink("sub/file", filepath.Join(data, "link")))

	snap, err := c.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap-1", SourceVolumeId: vol.VolumeId})
	must(t, err)
	s := snap.Snapshot
	if !s.ReadyToUse || s.SourceVolumeId != vol.VolumeId || s.SizeBytes != 5*mib || s.CreationTime.AsTime().IsZero() {
		t.Fatalf("snapshot: %v", s)
	}
	again, err := c.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap-1", SourceVolumeId: vol.VolumeId})
	must(t, err)
	if again.Snapshot.SnapshotId != s.SnapshotId || !again.Snapshot.CreationTime.AsTime().Equal(s.CreationTime.AsTime()) {
		t.Fatalf("CreateSnapshot not idempotent: %v vs %v", again.Snapshot, s)
	}
	other := createVolume(t, c, "pvc-other", mib, false, nil)
	_, err = c.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap-1", SourceVolumeId: other.VolumeId})
	wantCode(t, err, codes.AlreadyExists)
	_, err = c.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap-x", SourceVolumeId: "v-11111111111111111111"})
	wantCode(t, err, codes.NotFound)

	// The snapshot is a copy: writing the volume afterwards does not change it.
	must(t, os.WriteFile(filepath.Join(data, "sub", "file"), []byte("after snapshot"), 0o640))

	restored := createVolume(t, c, "pvc-restored", 5*mib, false, &csi.VolumeContentSource{
		Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: s.SnapshotId}}})
	if restored.ContentSource.GetSnapshot().GetSnapshotId() != s.SnapshotId {
		t.Fatalf("content source not returned: %v", restored)
	}
	checkFile(t, filepath.Join(c.st.volumeDir(restored.VolumeId), "data", "link"), "before snapshot", 0o640)

	clone := createVolume(t, c, "pvc-clone", 0, false, &csi.VolumeContentSource{
		Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: vol.VolumeId}}})
	if clone.ContentSource.GetVolume().GetVolumeId() != vol.VolumeId || clone.CapacityBytes != 5*mib {
		t.Fatalf("clone: %v", clone)
	}
	checkFile(t, filepath.Join(c.st.volumeDir(clone.VolumeId), "data", "sub", "file"), "after snapshot", 0o640)
	if target, err := os.Readlink(filepath.Join(c.st.volumeDir(clone.VolumeId), "data", "link")); err != nil || target != "sub/file" {
		t.Fatalf("symlink not kept: %q %v", target, err)
	}
	_, err = c.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-small", CapacityRange: &csi.CapacityRange{RequiredBytes: mib},
		VolumeCapabilities: []*csi.VolumeCapability{capability(false, rwo)},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
			Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: vol.VolumeId}}}})
	wantCode(t, err, codes.OutOfRange)

	// ListSnapshots and its filters.
	snap2, err := c.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap-2", SourceVolumeId: other.VolumeId})
	must(t, err)
	list := func(req *csi.ListSnapshotsRequest) []string {
		resp, err := c.ListSnapshots(ctx, req)
		must(t, err)
		var ids []string
		for _, e := range resp.Entries {
			ids = append(ids, e.Snapshot.SnapshotId)
		}
		return ids
	}
	if ids := list(&csi.ListSnapshotsRequest{}); len(ids) != 2 {
		t.Fatalf("list all: %v", ids)
	}
	if ids := list(&csi.ListSnapshotsRequest{SourceVolumeId: other.VolumeId}); len(ids) != 1 || ids[0] != snap2.Snapshot.SnapshotId {
		t.Fatalf("list by source: %v", ids)
	}
	if ids := list(&csi.ListSnapshotsRequest{SnapshotId: s.SnapshotId}); len(ids) != 1 || ids[0] != s.SnapshotId {
		t.Fatalf("list by id: %v", ids)
	}
	if ids := list(&csi.ListSnapshotsRequest{SnapshotId: "s-00000000000000000000"}); len(ids) != 0 {
		t.Fatalf("list by unknown id: %v", ids)
	}

	for range 2 { // idempotent
		_, err = c.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: s.SnapshotId})
		must(t, err)
	}
	_, err = c.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-late", VolumeCapabilities: []*csi.VolumeCapability{capability(false, rwo)},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: s.SnapshotId}}}})
	wantCode(t, err, codes.NotFound)
	// The restored volume does not depend on the deleted snapshot.
	checkFile(t, filepath.Join(c.st.volumeDir(restored.VolumeId), "data", "sub", "file"), "before snapshot", 0o640)
}

func checkFile(t *testing.T, path, content string, perm os.FileMode) {
	t.Helper()
	got, err := os.ReadFile(path)
	must(t, err)
	if string(got) != content {
		t.Fatalf("%s: %q, want %q", path, got, content)
	}
	info, err := os.Stat(path)
	must(t, err)
	if info.Mode().Perm() != perm {
		t.Fatalf("%s: mode %v, want %v", path, info.Mode().Perm(), perm)
	}
}

func TestBlockVolumeSnapshotAndExpand(t *testing.T) {
	c := newController(t)
	vol := createVolume(t, c, "pvc-block", 4*mib+1, true, nil)
	if vol.CapacityBytes != 4*mib+512 {
		t.Fatalf("capacity not rounded to sectors: %d", vol.CapacityBytes)
	}
	img := filepath.Join(c.st.volumeDir(vol.VolumeId), "block.img")
	var st unix.Stat_t
	must(t, unix.Stat(img, &st))
	if st.Size != 4*mib+512 || st.Blocks*512 >= mib {
		t.Fatalf("block.img: size %d, allocated %d: want sparse", st.Size, st.Blocks*512)
	}
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	must(t, err)
	_, err = f.WriteAt([]byte("block bytes"), 3*mib)
	must(t, err)
	must(t, f.Close())

	snap, err := c.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap-block", SourceVolumeId: vol.VolumeId})
	must(t, err)
	restored := createVolume(t, c, "pvc-block-restored", 8*mib, true, &csi.VolumeContentSource{
		Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.Snapshot.SnapshotId}}})
	checkBytesAt(t, filepath.Join(c.st.volumeDir(restored.VolumeId), "block.img"), 3*mib, "block bytes", 8*mib)
	clone := createVolume(t, c, "pvc-block-clone", 0, true, &csi.VolumeContentSource{
		Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: vol.VolumeId}}})
	checkBytesAt(t, filepath.Join(c.st.volumeDir(clone.VolumeId), "block.img"), 3*mib, "block bytes", 4*mib+512)

	// A block snapshot cannot become a filesystem volume.
	_, err = c.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-mismatch", VolumeCapabilities: []*csi.VolumeCapability{capability(false, rwo)},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.Snapshot.SnapshotId}}}})
	wantCode(t, err, codes.InvalidArgument)

	resp, err := c.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: vol.VolumeId,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 16 * mib}})
	must(t, err)
	if resp.CapacityBytes != 16*mib || resp.NodeExpansionRequired {
		t.Fatalf("expand: %v", resp)
	}
	checkBytesAt(t, img, 3*mib, "block bytes", 16*mib)
}

func checkBytesAt(t *testing.T, path string, off int64, want string, size int64) {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	got := make([]byte, len(want))
	_, err = f.ReadAt(got, off)
	must(t, err)
	if string(got) != want {
		t.Fatalf("%s at %d: %q, want %q", path, off, got, want)
	}
	info, err := f.Stat()
	must(t, err)
	if info.Size() != size {
		t.Fatalf("%s: size %d, want %d", path, info.Size(), size)
	}
}

func TestExpandFilesystem(t *testing.T) {
	c := newController(t)
	id := createVolume(t, c, "pvc-grow", 2*mib, false, nil).VolumeId
	expand := func(size int64) int64 {
		resp, err := c.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: id,
			CapacityRange: &csi.CapacityRange{RequiredBytes: size}})
		must(t, err)
		return resp.CapacityBytes
	}
	if got := expand(6 * mib); got != 6*mib {
		t.Fatalf("expand: %d", got)
	}
	if got := expand(3 * mib); got != 6*mib { // never shrinks
		t.Fatalf("shrank to %d", got)
	}
	if m, _ := c.st.readVolume(id); m.CapacityBytes != 6*mib {
		t.Fatalf("meta.json capacity %d", m.CapacityBytes)
	}
	_, err := c.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: "v-22222222222222222222",
		CapacityRange: &csi.CapacityRange{RequiredBytes: mib}})
	wantCode(t, err, codes.NotFound)
}

func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
}

// unmountAll makes sure a failed test leaves no mount behind under dir (and so t.TempDir can clean up).
func unmountAll(t *testing.T, dir string) {
	t.Cleanup(func() {
		mounts, _ := readMounts()
		for i := len(mounts) - 1; i >= 0; i-- {
			if strings.HasPrefix(mounts[i].mountPoint, dir+"/") {
				_ = unix.Unmount(mounts[i].mountPoint, unix.MNT_DETACH)
			}
		}
	})
}

func nodePublish(n *nodeServer, id, target string, block, readonly bool) error {
	_, err := n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target,
		VolumeCapability: capability(block, rwo), Readonly: readonly})
	return err
}

func nodeUnpublish(n *nodeServer, id, target string) error {
	_, err := n.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
	return err
}

func countMounts(t *testing.T, path string) int {
	mounts, err := readMounts()
	must(t, err)
	n := 0
	for _, m := range mounts {
		if m.mountPoint == path {
			n++
		}
	}
	return n
}

func TestNodePublishFilesystem(t *testing.T) {
	needRoot(t)
	c := newController(t)
	pods := t.TempDir()
	unmountAll(t, pods)
	// A node instance is another process sharing only the directory: give it a store of its own.
	st, err := openStore(c.st.dir)
	must(t, err)
	nodeA := &nodeServer{st: st, nodeID: "node-a"}
	id := createVolume(t, c, "pvc-mount", mib, false, nil).VolumeId
	target := filepath.Join(pods, "pod1", "volumes", "pvc-mount", "mount")

	wantCode(t, nodePublish(nodeA, "v-33333333333333333333", target, false, false), codes.NotFound)
	// Not attached to node-a yet (and attached elsewhere does not count): the disk is not visible here.
	wantCode(t, nodePublish(nodeA, id, target, false, false), codes.FailedPrecondition)
	must(t, publish(c, id, "node-b", false, rwo))
	wantCode(t, nodePublish(nodeA, id, target, false, false), codes.FailedPrecondition)
	must(t, unpublish(c, id, "node-b"))
	must(t, publish(c, id, "node-a", false, rwo))

	must(t, nodePublish(nodeA, id, target, false, false))
	must(t, nodePublish(nodeA, id, target, false, false)) // idempotent: still one mount
	if n := countMounts(t, target); n != 1 {
		t.Fatalf("%d mounts at %s", n, target)
	}
	must(t, os.WriteFile(filepath.Join(target, "written-by-pod"), []byte("through the mount"), 0o644))
	checkFile(t, filepath.Join(c.st.volumeDir(id), "data", "written-by-pod"), "through the mount", 0o644)

	roTarget := filepath.Join(pods, "pod2", "mount")
	must(t, nodePublish(nodeA, id, roTarget, false, true))
	checkFile(t, filepath.Join(roTarget, "written-by-pod"), "through the mount", 0o644)
	if err := os.WriteFile(filepath.Join(roTarget, "nope"), nil, 0o644); !errors.Is(err, unix.EROFS) {
		t.Fatalf("read-only publish is writable: %v", err)
	}

	for _, tp := range []string{target, roTarget} {
		must(t, nodeUnpublish(nodeA, id, tp))
		if n := countMounts(t, tp); n != 0 {
			t.Fatalf("%s still mounted", tp)
		}
		if _, err := os.Stat(tp); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("target %s not removed: %v", tp, err)
		}
		must(t, nodeUnpublish(nodeA, id, tp)) // idempotent
	}
	checkFile(t, filepath.Join(c.st.volumeDir(id), "data", "written-by-pod"), "through the mount", 0o644)

	// The volume follows its pod: detach from node-a, attach to node-b, and node-b sees the same data.
	must(t, unpublish(c, id, "node-a"))
	must(t, publish(c, id, "node-b", false, rwo))
	nodeB := &nodeServer{st: st, nodeID: "node-b"}
	target2 := filepath.Join(pods, "pod1-moved", "mount")
	must(t, nodePublish(nodeB, id, target2, false, false))
	checkFile(t, filepath.Join(target2, "written-by-pod"), "through the mount", 0o644)
	must(t, nodeUnpublish(nodeB, id, target2))
}

func TestNodePublishBlock(t *testing.T) {
	needRoot(t)
	if err := exec.Command("losetup", "--find").Run(); err != nil {
		t.Skipf("no loop devices here: %v", err)
	}
	c := newController(t)
	pods := t.TempDir()
	unmountAll(t, pods)
	n := &nodeServer{st: c.st, nodeID: "node-a"}
	id := createVolume(t, c, "pvc-rawblock", 4*mib, true, nil).VolumeId
	img := filepath.Join(c.st.volumeDir(id), "block.img")
	t.Cleanup(func() { // detach whatever a failed test left
		out, _ := exec.Command("losetup", "--noheadings", "--raw", "--output", "NAME", "--list", "--associated", img).Output()
		for _, dev := range strings.Fields(string(out)) {
			_ = exec.Command("losetup", "--detach", dev).Run()
		}
	})
	must(t, publish(c, id, "node-a", true, rwo))
	wantCode(t, nodePublish(n, id, filepath.Join(pods, "fs"), false, false), codes.InvalidArgument)

	target1 := filepath.Join(pods, "pod1", "dev")
	target2 := filepath.Join(pods, "pod2", "dev")
	must(t, nodePublish(n, id, target1, true, false))
	must(t, nodePublish(n, id, target1, true, false)) // idempotent
	must(t, nodePublish(n, id, target2, true, false)) // a second pod on the node shares the loop device
	if got := loopsOf(t, img); len(got) != 1 {
		t.Fatalf("want one loop device for %s, got %v", img, got)
	}
	dev, err := os.OpenFile(target1, os.O_RDWR, 0)
	must(t, err)
	_, err = dev.WriteAt([]byte("raw write"), mib)
	must(t, err)
	must(t, dev.Sync())
	must(t, dev.Close())
	checkBytesAt(t, img, mib, "raw write", 4*mib)

	must(t, nodeUnpublish(n, id, target1))
	if got := loopsOf(t, img); len(got) != 1 {
		t.Fatalf("loop device detached while pod2 still has it: %v", got)
	}
	must(t, nodeUnpublish(n, id, target2))
	if got := loopsOf(t, img); len(got) != 0 {
		t.Fatalf("loop device left attached: %v", got)
	}
	for _, tp := range []string{target1, target2} {
		if _, err := os.Stat(tp); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("target %s not removed: %v", tp, err)
		}
	}
	must(t, nodeUnpublish(n, id, target1)) // idempotent
}

func loopsOf(t *testing.T, img string) []string {
	out, err := exec.Command("losetup", "--noheadings", "--raw", "--output", "NAME", "--list", "--associated", img).Output()
	must(t, err)
	return strings.Fields(string(out))
}

// TestGRPCServer goes through a real unix socket, as the sidecars and the kubelet do.
func TestGRPCServer(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(dir, "csi.sock")
	must(t, os.WriteFile(socket, nil, 0o600)) // a stale socket file from a killed instance
	stop, err := start(config{endpoint: "unix://" + socket, mode: "controller", stateDir: filepath.Join(dir, "state")})
	must(t, err)
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	must(t, err)
	defer conn.Close()

	identity := csi.NewIdentityClient(conn)
	info, err := identity.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	must(t, err)
	if info.Name != driverName || info.VendorVersion != version {
		t.Fatalf("GetPluginInfo: %v", info)
	}
	probe, err := identity.Probe(ctx, &csi.ProbeRequest{})
	must(t, err)
	if !probe.GetReady().GetValue() {
		t.Fatalf("Probe: %v", probe)
	}
	caps, err := identity.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	must(t, err)
	if caps.Capabilities[0].GetService().GetType() != csi.PluginCapability_Service_CONTROLLER_SERVICE {
		t.Fatalf("GetPluginCapabilities: %v", caps)
	}
	controller := csi.NewControllerClient(conn)
	ccaps, err := controller.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
	must(t, err)
	if len(ccaps.Capabilities) != 6 {
		t.Fatalf("ControllerGetCapabilities: %v", ccaps)
	}
	vol, err := controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-grpc",
		VolumeCapabilities: []*csi.VolumeCapability{capability(false, rwo)}})
	must(t, err)
	if _, err := os.Stat(filepath.Join(dir, "state", "volumes", vol.Volume.VolumeId, "meta.json")); err != nil {
		t.Fatal(err)
	}
	// Node RPCs are not served by the controller.
	_, err = csi.NewNodeClient(conn).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	wantCode(t, err, codes.Unimplemented)

	stop()
	if _, err := os.Stat(socket); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left behind: %v", err)
	}
}

// TestRegistration plays the kubelet's part of plugin registration against a node instance.
func TestRegistration(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(dir, "plugins", "csi.storbench.local", "csi.sock")
	regDir := filepath.Join(dir, "plugins_registry")
	stop, err := start(config{endpoint: "unix://" + socket, mode: "node", stateDir: filepath.Join(dir, "state"),
		nodeID: "node-a", registrationDir: regDir})
	must(t, err)
	regSocket := filepath.Join(regDir, "csi.storbench.local-reg.sock")

	conn, err := grpc.NewClient("unix://"+regSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	must(t, err)
	defer conn.Close()
	reg := registerapi.NewRegistrationClient(conn)
	info, err := reg.GetInfo(ctx, &registerapi.InfoRequest{})
	must(t, err)
	if info.Type != registerapi.CSIPlugin || info.Name != driverName || info.Endpoint != socket ||
		len(info.SupportedVersions) != 1 || info.SupportedVersions[0] != "1.0.0" {
		t.Fatalf("GetInfo: %+v", info)
	}
	_, err = reg.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true})
	must(t, err)

	// What the kubelet does next: NodeGetInfo on the endpoint it was given.
	csiConn, err := grpc.NewClient("unix://"+info.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	must(t, err)
	defer csiConn.Close()
	node, err := csi.NewNodeClient(csiConn).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	must(t, err)
	if node.NodeId != "node-a" || node.MaxVolumesPerNode != 0 || node.AccessibleTopology != nil {
		t.Fatalf("NodeGetInfo: %v", node)
	}

	stop()
	for _, s := range []string{socket, regSocket} {
		if _, err := os.Stat(s); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("socket %s left behind: %v", s, err)
		}
	}
}

func TestStartRejectsBadConfig(t *testing.T) {
	dir := t.TempDir()
	for _, cfg := range []config{
		{endpoint: "unix://" + filepath.Join(dir, "a.sock"), mode: "both", stateDir: dir},
		{endpoint: "/no/scheme.sock", mode: "controller", stateDir: dir},
		{endpoint: "unix://" + filepath.Join(dir, "b.sock"), mode: "node", stateDir: dir}, // no node id
		{endpoint: "unix://" + filepath.Join(dir, "c.sock"), mode: "controller"},          // no state dir
	} {
		if stop, err := start(cfg); err == nil {
			stop()
			t.Errorf("start(%+v) succeeded", cfg)
		}
	}
}
