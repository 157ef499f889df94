package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// nodeServer mounts volumes for the kubelet of one lab node. Every node instance runs on this machine in the
// host's mount namespace, so a mount made here is the mount the kubelet and the container runtime see.
// There is no staging step: a filesystem volume is bind-mounted straight into each pod's target.
type nodeServer struct {
	csi.UnimplementedNodeServer
	st     *store
	nodeID string
}

func (n *nodeServer) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

// NodeGetInfo gives no topology: every node can reach every volume, which is what lets a volume follow its pod.
func (n *nodeServer) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: n.nodeID, MaxVolumesPerNode: 0}, nil
}

func (n *nodeServer) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, target, capability := req.GetVolumeId(), req.GetTargetPath(), req.GetVolumeCapability()
	if id == "" || target == "" || capability == nil {
		return nil, status.Error(codes.InvalidArgument, "volume_id, target_path and volume_capability are required")
	}
	block := capability.GetBlock() != nil
	if !block && capability.GetMount() == nil {
		return nil, status.Error(codes.InvalidArgument, "the volume capability needs block or mount access")
	}
	// The lock keeps two node instances from each making a loop device for the same Block volume.
	unlock, err := n.st.lock()
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	defer unlock()
	m, err := n.st.readVolume(id)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	} else if m == nil {
		return nil, status.Errorf(codes.NotFound, "volume %q not found", id)
	}
	nodes, err := n.st.attachments(id)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if _, ok := nodes[n.nodeID]; !ok {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not attached to node %s", id, n.nodeID)
	}
	if block != m.Block {
		return nil, status.Errorf(codes.InvalidArgument, "volume %s: access type does not match the volume (block=%v)", id, m.Block)
	}
	if block {
		err = publishBlock(filepath.Join(n.st.volumeDir(id), "block.img"), target, req.GetReadonly())
	} else {
		err = publishFilesystem(filepath.Join(n.st.volumeDir(id), "data"), target, req.GetReadonly())
	}
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func publishFilesystem(data, target string, readonly bool) error {
	if err := os.MkdirAll(target, 0o750); err != nil { // the kubelet may have made it already
		return err
	}
	if mounted, err := isMountPoint(target); err != nil || mounted {
		return err // a retry after success: already there
	}
	return bindMount(data, target, readonly)
}

// publishBlock gives the volume's block.img a loop device and bind-mounts that device node onto target (a
// file), which is how the kubelet expects a raw block device.
func publishBlock(img, target string, readonly bool) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return err
	}
	if mounted, err := isMountPoint(target); err != nil || mounted {
		return err
	}
	dev, err := attachLoop(img, readonly)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	f.Close()
	return bindMount(dev, target, false) // a read-only mount would not stop writes to a device; the -r loop does
}

func bindMount(src, target string, readonly bool) error {
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mount %s on %s: %w", src, target, err)
	}
	if readonly { // MS_RDONLY is ignored on the first bind mount: it takes a remount
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = unix.Unmount(target, 0)
			return fmt.Errorf("remount %s read-only: %w", target, err)
		}
	}
	return nil
}

func (n *nodeServer) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	target := req.GetTargetPath()
	if req.GetVolumeId() == "" || target == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_id and target_path are required")
	}
	unlock, err := n.st.lock()
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	defer unlock()
	loop := ""
	// Unmount until nothing is mounted there: a publish retried after a lost reply may have stacked two mounts.
	for {
		mounted, err := isMountPoint(target)
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		if !mounted {
			break
		}
		if dev := loopDeviceAt(target); dev != "" {
			loop = dev
		}
		if err := unix.Unmount(target, 0); err != nil {
			return nil, status.Errorf(codes.Internal, "unmount %s: %v", target, err)
		}
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Printf("NodeUnpublishVolume: leaving %s: %v", target, err) // not ours to empty; unmounted all the same
	}
	if loop != "" {
		n.detachLoopIfUnused(loop)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// detachLoopIfUnused frees a loop device of ours once no other target (another pod of this volume on this
// node) has its device node mounted. Bind mounts of a device node do not hold it open, so the kernel cannot
// tell: the mount table can. Loop devices not backed by a file in the state directory are left alone.
func (n *nodeServer) detachLoopIfUnused(dev string) {
	name := filepath.Base(dev)
	backing, err := os.ReadFile(filepath.Join("/sys/block", name, "loop", "backing_file"))
	stateDir, _ := filepath.EvalSymlinks(n.st.dir) // losetup records the file's canonical path
	stateDir, _ = filepath.Abs(stateDir)
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(backing)), stateDir+"/") {
		return
	}
	mounts, err := readMounts()
	if err != nil {
		log.Printf("keeping %s: %v", dev, err)
		return
	}
	for _, m := range mounts {
		if m.root == "/"+name { // a bind mount of /dev/<name> from devtmpfs
			return
		}
	}
	if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil {
		log.Printf("losetup --detach %s: %v: %s", dev, err, strings.TrimSpace(string(out)))
	}
}

// attachLoop returns a loop device backed by img, reusing one made before (by any node instance: loop devices
// belong to the whole machine) so that every pod of the volume writes through the same device.
func attachLoop(img string, readonly bool) (string, error) {
	want := "0"
	if readonly {
		want = "1"
	}
	out, err := exec.Command("losetup", "--list", "--noheadings", "--raw", "--output", "NAME,RO", "--associated", img).Output()
	if err != nil {
		return "", fmt.Errorf("losetup --associated %s: %w", img, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[1] == want {
			return f[0], nil
		}
	}
	args := []string{"--find", "--show"}
	if readonly {
		args = append(args, "--read-only")
	}
	out, err = exec.Command("losetup", append(args, img)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("losetup %v %s: %w: %s", args, img, err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// refreshLoops tells every loop device backed by img that img has grown.
func refreshLoops(img string) {
	out, err := exec.Command("losetup", "--list", "--noheadings", "--raw", "--output", "NAME", "--associated", img).Output()
	if err != nil {
		log.Printf("losetup --associated %s: %v", img, err)
		return
	}
	for _, dev := range strings.Fields(string(out)) {
		if out, err := exec.Command("losetup", "--set-capacity", dev).CombinedOutput(); err != nil {
			log.Printf("losetup --set-capacity %s: %v: %s", dev, err, strings.TrimSpace(string(out)))
		}
	}
}

// loopDeviceAt names the loop device whose node is mounted at target, or "" if target is not a loop device.
func loopDeviceAt(target string) string {
	var st unix.Stat_t
	if err := unix.Stat(target, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return ""
	}
	name, err := os.Readlink(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev)))
	if err != nil || !strings.HasPrefix(filepath.Base(name), "loop") {
		return ""
	}
	return "/dev/" + filepath.Base(name)
}

type mountEntry struct {
	root, mountPoint string
}

// readMounts parses /proc/self/mountinfo; kernel-escaped characters (\040 for a space) are decoded.
func readMounts() ([]mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var mounts []mountEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mounts = append(mounts, mountEntry{root: unescapeMount(fields[3]), mountPoint: unescapeMount(fields[4])})
	}
	return mounts, sc.Err()
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// isMountPoint tells whether something is mounted exactly at path (symlinks resolved, as the kernel records it).
func isMountPoint(path string) (bool, error) {
	resolved, err := filepath.EvalSymlinks(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	resolved, err = filepath.Abs(resolved)
	if err != nil {
		return false, err
	}
	mounts, err := readMounts()
	if err != nil {
		return false, err
	}
	for _, m := range mounts {
		if m.mountPoint == resolved {
			return true, nil
		}
	}
	return false, nil
}
