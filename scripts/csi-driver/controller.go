package main

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

const defaultCapacity = 1 << 30 // 1 GiB, when a request names no size

// controllerServer keeps nothing in memory: every call takes the state directory's lock and works on files,
// so a retry that reaches a restarted controller finds what the first attempt did.
type controllerServer struct {
	csi.UnimplementedControllerServer
	st *store
}

func (c *controllerServer) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, t := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
		csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
		csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
	} {
		caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{
			Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

func (c *controllerServer) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	name := req.GetName()
	if name == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	block, err := accessType(req.GetVolumeCapabilities())
	if err != nil {
		return nil, err
	}
	capacity, err := capacityOf(req.GetCapacityRange(), block)
	if err != nil {
		return nil, err
	}
	id := idFor("v-", name)

	unlock, err := c.st.lock()
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	defer unlock()

	// A retry (the provisioner's timeout is shorter than a large copy) finds the volume made the first time.
	if m, err := c.st.readVolume(id); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	} else if m != nil {
		if m.Name != name || m.Block != block || m.CapacityBytes < capacity ||
			(req.GetCapacityRange().GetLimitBytes() > 0 && m.CapacityBytes > req.GetCapacityRange().GetLimitBytes()) {
			return nil, status.Errorf(codes.AlreadyExists, "volume %s exists with other parameters", name)
		}
		return &csi.CreateVolumeResponse{Volume: volumeOf(id, m)}, nil
	}

	// Where the content comes from, if anywhere.
	var src *contentSource
	var srcDir string
	if s := req.GetVolumeContentSource().GetSnapshot(); s != nil {
		snap, err := c.st.readSnapshot(s.GetSnapshotId())
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		} else if snap == nil {
			return nil, status.Errorf(codes.NotFound, "snapshot %q not found", s.GetSnapshotId())
		}
		if err := fitsSource(snap.Block, snap.SizeBytes, block, &capacity, req.GetCapacityRange()); err != nil {
			return nil, err
		}
		src, srcDir = &contentSource{Kind: "snapshot", ID: s.GetSnapshotId()}, c.st.snapshotDir(s.GetSnapshotId())
	} else if v := req.GetVolumeContentSource().GetVolume(); v != nil {
		vol, err := c.st.readVolume(v.GetVolumeId())
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		} else if vol == nil {
			return nil, status.Errorf(codes.NotFound, "volume %q not found", v.GetVolumeId())
		}
		if err := fitsSource(vol.Block, vol.CapacityBytes, block, &capacity, req.GetCapacityRange()); err != nil {
			return nil, err
		}
		src, srcDir = &contentSource{Kind: "volume", ID: v.GetVolumeId()}, c.st.volumeDir(v.GetVolumeId())
	}

	tmp, err := c.st.newTemp("volumes")
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	defer os.RemoveAll(tmp) // a no-op once renamed into place
	switch {
	case src != nil:
		err = copyContent(srcDir, tmp, block)
		if err == nil && block {
			err = growFile(filepath.Join(tmp, "block.img"), capacity)
		}
	case block:
		err = growFile(filepath.Join(tmp, "block.img"), capacity)
	default:
		// 0777 like the host-path driver: pods running as any user can write their volume.
		if err = os.Mkdir(filepath.Join(tmp, "data"), 0o777); err == nil {
			err = os.Chmod(filepath.Join(tmp, "data"), 0o777)
		}
	}
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	m := &volumeMeta{Name: name, CapacityBytes: capacity, Block: block, ContentSource: src,
		Created: time.Now().UTC().Format(time.RFC3339Nano)}
	if err := writeJSON(filepath.Join(tmp, "meta.json"), m); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.Rename(tmp, c.st.volumeDir(id)); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.CreateVolumeResponse{Volume: volumeOf(id, m)}, nil
}

func (c *controllerServer) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	unlock, err := c.st.lock()
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	defer unlock()
	if m, err := c.st.readVolume(id); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	} else if m == nil {
		return &csi.DeleteVolumeResponse{}, nil // already gone: deletion is idempotent
	}
	// A disk still attached somewhere may still be mounted there: deleting it would pull it from under a pod.
	nodes, err := c.st.attachments(id)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if len(nodes) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is still attached to %s", id, strings.Join(sortedKeys(nodes), ", "))
	}
	if err := c.st.removeDir("volumes", c.st.volumeDir(id)); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.DeleteVolumeResponse{}, nil
}

// ControllerPublishVolume attaches the volume to a node: nothing moves, but NodePublishVolume on that node
// works only once this has recorded volumes/<id>/attached/<node>, as a cloud disk is visible only where it is
// attached.
func (c *controllerServer) ControllerPublishVolume(_ context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	id, node, capability := req.GetVolumeId(), req.GetNodeId(), req.GetVolumeCapability()
	if id == "" || node == "" || capability == nil {
		return nil, status.Error(codes.InvalidArgument, "volume_id, node_id and volume_capability are required")
	}
	if !validNodeName(node) {
		return nil, status.Errorf(codes.NotFound, "no node %q", node)
	}
	unlock, err := c.st.lock()
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	defer unlock()
	m, err := c.st.readVolume(id)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	} else if m == nil {
		return nil, status.Errorf(codes.NotFound, "volume %q not found", id)
	}
	if (capability.GetBlock() != nil) != m.Block {
		return nil, status.Errorf(codes.InvalidArgument, "volume %s: access type does not match the volume (block=%v)", id, m.Block)
	}
	nodes, err := c.st.attachments(id)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	mode := capability.GetAccessMode().GetMode().String()
	for other, otherMode := range nodes {
		if other != node && (singleNode(mode) || singleNode(otherMode)) {
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s is attached to node %s (%s)", id, other, otherMode)
		}
	}
	dir := filepath.Join(c.st.volumeDir(id), "attached")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := writeFileAtomic(filepath.Join(dir, node), []byte(mode+"\n")); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.ControllerPublishVolumeResponse{}, nil
}

func (c *controllerServer) ControllerUnpublishVolume(_ context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	id, node := req.GetVolumeId(), req.GetNodeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	}
	if !validID("v-", id) || (node != "" && !validNodeName(node)) {
		return &csi.ControllerUnpublishVolumeResponse{}, nil // nothing of that name can be attached
	}
	unlock, err := c.st.lock()
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	defer unlock()
	nodes, err := c.st.attachments(id) // empty for a missing volume
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	for n := range nodes {
		if node == "" || n == node { // the spec: no node_id means every node
			if err := os.Remove(filepath.Join(c.st.volumeDir(id), "attached", n)); err != nil && !os.IsNotExist(err) {
				return nil, status.Error(codes.Internal, err.Error())
			}
		}
	}
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}

func (c *controllerServer) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if req.GetVolumeId() == "" || len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume_id and volume_capabilities are required")
	}
	m, err := c.st.readVolume(req.GetVolumeId())
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	} else if m == nil {
		return nil, status.Errorf(codes.NotFound, "volume %q not found", req.GetVolumeId())
	}
	if block, err := accessType(req.GetVolumeCapabilities()); err != nil || block != m.Block {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: "access type does not match the volume"}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext:      req.GetVolumeContext(),
		VolumeCapabilities: req.GetVolumeCapabilities(),
		Parameters:         req.GetParameters(),
		MutableParameters:  req.GetMutableParameters(),
	}}, nil
}

// ControllerExpandVolume records the new size; a Block volume's file grows too, and loop devices already made
// from it are told to re-read its size, so the new space is usable without a node step.
func (c *controllerServer) ControllerExpandVolume(_ context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" || req.GetCapacityRange() == nil {
		return nil, status.Error(codes.InvalidArgument, "volume_id and capacity_range are required")
	}
	unlock, err := c.st.lock()
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	defer unlock()
	m, err := c.st.readVolume(id)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	} else if m == nil {
		return nil, status.Errorf(codes.NotFound, "volume %q not found", id)
	}
	want := roundUp(req.GetCapacityRange().GetRequiredBytes(), m.Block)
	if limit := req.GetCapacityRange().GetLimitBytes(); limit > 0 && want > limit {
		return nil, status.Errorf(codes.OutOfRange, "required %d exceeds limit %d", want, limit)
	}
	if want > m.CapacityBytes { // never shrink: a retried older request must not undo a newer one
		if m.Block {
			img := filepath.Join(c.st.volumeDir(id), "block.img")
			if err := growFile(img, want); err != nil {
				return nil, status.Error(codes.Internal, err.Error())
			}
			refreshLoops(img)
		}
		m.CapacityBytes = want
		if err := writeJSON(filepath.Join(c.st.volumeDir(id), "meta.json"), m); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: m.CapacityBytes, NodeExpansionRequired: false}, nil
}

func (c *controllerServer) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	name, source := req.GetName(), req.GetSourceVolumeId()
	if name == "" || source == "" {
		return nil, status.Error(codes.InvalidArgument, "name and source_volume_id are required")
	}
	id := idFor("s-", name)
	unlock, err := c.st.lock()
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	defer unlock()
	if s, err := c.st.readSnapshot(id); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	} else if s != nil {
		if s.Name != name || s.SourceVolumeID != source {
			return nil, status.Errorf(codes.AlreadyExists, "snapshot %s exists for volume %s", name, s.SourceVolumeID)
		}
		return &csi.CreateSnapshotResponse{Snapshot: snapshotOf(id, s)}, nil
	}
	vol, err := c.st.readVolume(source)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	} else if vol == nil {
		return nil, status.Errorf(codes.NotFound, "volume %q not found", source)
	}
	tmp, err := c.st.newTemp("snapshots")
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	defer os.RemoveAll(tmp)
	// A full copy, taken while the volume may be in use: crash-consistent, like a cloud disk snapshot.
	if err := copyContent(c.st.volumeDir(source), tmp, vol.Block); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	s := &snapshotMeta{Name: name, SourceVolumeID: source, SizeBytes: vol.CapacityBytes,
		CreationTimeUnixNs: time.Now().UnixNano(), Block: vol.Block}
	if err := writeJSON(filepath.Join(tmp, "meta.json"), s); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.Rename(tmp, c.st.snapshotDir(id)); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.CreateSnapshotResponse{Snapshot: snapshotOf(id, s)}, nil
}

func (c *controllerServer) DeleteSnapshot(_ context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "snapshot_id is required")
	}
	if !validID("s-", id) {
		return &csi.DeleteSnapshotResponse{}, nil
	}
	unlock, err := c.st.lock()
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	defer unlock()
	if err := c.st.removeDir("snapshots", c.st.snapshotDir(id)); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.DeleteSnapshotResponse{}, nil
}

// ListSnapshots reads without the lock: meta.json files appear and change only by rename.
func (c *controllerServer) ListSnapshots(_ context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	var ids []string
	if req.GetSnapshotId() != "" {
		ids = []string{req.GetSnapshotId()}
	} else {
		entries, err := os.ReadDir(filepath.Join(c.st.dir, "snapshots"))
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		for _, e := range entries {
			ids = append(ids, e.Name()) // sorted by name; ".tmp-" entries fail validID in readSnapshot
		}
	}
	var all []*csi.ListSnapshotsResponse_Entry
	for _, id := range ids {
		s, err := c.st.readSnapshot(id)
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		if s != nil && (req.GetSourceVolumeId() == "" || s.SourceVolumeID == req.GetSourceVolumeId()) {
			all = append(all, &csi.ListSnapshotsResponse_Entry{Snapshot: snapshotOf(id, s)})
		}
	}
	// Simple paging: the token is the index of the next entry.
	start := 0
	if t := req.GetStartingToken(); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 || n > len(all) {
			return nil, status.Errorf(codes.Aborted, "invalid starting_token %q", t)
		}
		start = n
	}
	all = all[start:]
	next := ""
	if max := int(req.GetMaxEntries()); max > 0 && len(all) > max {
		all, next = all[:max], strconv.Itoa(start+max)
	}
	return &csi.ListSnapshotsResponse{Entries: all, NextToken: next}, nil
}

// accessType tells whether the capabilities ask for a Block volume; they must all agree.
func accessType(caps []*csi.VolumeCapability) (bool, error) {
	if len(caps) == 0 {
		return false, status.Error(codes.InvalidArgument, "volume_capabilities are required")
	}
	block := caps[0].GetBlock() != nil
	for _, c := range caps {
		if c.GetBlock() == nil && c.GetMount() == nil {
			return false, status.Error(codes.InvalidArgument, "a volume capability needs block or mount access")
		}
		if (c.GetBlock() != nil) != block {
			return false, status.Error(codes.InvalidArgument, "a volume cannot be both block and mount")
		}
	}
	return block, nil
}

func capacityOf(r *csi.CapacityRange, block bool) (int64, error) {
	required, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	if required < 0 || limit < 0 {
		return 0, status.Error(codes.InvalidArgument, "negative capacity")
	}
	if required == 0 {
		required = defaultCapacity
		if limit > 0 && limit < required {
			required = limit
		}
	}
	required = roundUp(required, block)
	if limit > 0 && required > limit {
		return 0, status.Errorf(codes.OutOfRange, "required %d exceeds limit %d", required, limit)
	}
	return required, nil
}

// roundUp makes a Block volume a whole number of 512-byte sectors, which a loop device needs.
func roundUp(n int64, block bool) int64 {
	if block {
		return (n + 511) / 512 * 512
	}
	return n
}

// fitsSource checks that a new volume can hold its source's content, and sizes it to the source when the
// request named no size.
func fitsSource(srcBlock bool, srcSize int64, block bool, capacity *int64, r *csi.CapacityRange) error {
	if srcBlock != block {
		return status.Error(codes.InvalidArgument, "the content source's access type (block or mount) differs from the volume's")
	}
	if r.GetRequiredBytes() == 0 { // no size asked for: as large as the source, not the default
		*capacity = srcSize
	}
	if *capacity < srcSize {
		return status.Errorf(codes.OutOfRange, "capacity %d is smaller than the source's %d", *capacity, srcSize)
	}
	if limit := r.GetLimitBytes(); limit > 0 && *capacity > limit {
		return status.Errorf(codes.OutOfRange, "the source's size %d exceeds limit %d", srcSize, limit)
	}
	return nil
}

// growFile makes path (created if missing) at least size bytes long without writing: a sparse file.
func growFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if info.Size() < size {
		return f.Truncate(size)
	}
	return nil
}

func volumeOf(id string, m *volumeMeta) *csi.Volume {
	v := &csi.Volume{VolumeId: id, CapacityBytes: m.CapacityBytes}
	if m.ContentSource != nil {
		switch m.ContentSource.Kind {
		case "snapshot":
			v.ContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
				Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: m.ContentSource.ID}}}
		case "volume":
			v.ContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
				Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: m.ContentSource.ID}}}
		}
	}
	return v
}

func snapshotOf(id string, s *snapshotMeta) *csi.Snapshot {
	return &csi.Snapshot{SnapshotId: id, SourceVolumeId: s.SourceVolumeID, SizeBytes: s.SizeBytes,
		CreationTime: timestamppb.New(time.Unix(0, s.CreationTimeUnixNs)), ReadyToUse: true}
}

// singleNode tells whether an access mode (by its enum name) lets only one node use the volume at a time.
func singleNode(mode string) bool { return strings.HasPrefix(mode, "SINGLE_NODE_") }

// validNodeName keeps a node id usable as a file name in attached/. Kubernetes node names are DNS names.
func validNodeName(n string) bool {
	return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, "/\x00") && !strings.HasPrefix(n, ".tmp-")
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
