// storbench-csi is a small but real CSI driver for storbench's single-machine Kubernetes lab.
//
// The upstream host-path driver cannot be had here, so this one does the same job: volumes are directories
// (or sparse files for Block volumes) under one shared --state-dir. Every instance — the controller and one
// node instance per lab "node", all on this machine — keeps no state in memory, so a volume attached by the
// controller and mounted by one node instance can be unmounted there and mounted by another: a volume follows
// its pod. It has a real attach step (ControllerPublishVolume records which node may use a volume), so
// Kubernetes' attach/detach controller and external-attacher run exactly as with a cloud disk.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const driverName = "csi.storbench.local"

// version is overridden at build time with -ldflags "-X main.version=...".
var version = "0.1.0"

type config struct {
	endpoint        string // unix:///path/csi.sock
	mode            string // controller or node
	stateDir        string
	nodeID          string
	registrationDir string
}

func main() {
	var cfg config
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.StringVar(&cfg.endpoint, "endpoint", "", "CSI endpoint, unix:///path/to/csi.sock")
	flag.StringVar(&cfg.mode, "mode", "", "controller or node")
	flag.StringVar(&cfg.stateDir, "state-dir", "", "directory shared by all instances that holds every volume and snapshot")
	flag.StringVar(&cfg.nodeID, "node-id", "", "this node's name (node mode)")
	flag.StringVar(&cfg.registrationDir, "registration-dir", "",
		"the kubelet's plugins_registry directory (node mode); the driver registers itself there")
	flag.Parse()
	if *showVersion {
		fmt.Printf("storbench-csi %s (driver %s)\n", version, driverName)
		return
	}
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	prefix := "storbench-csi[" + cfg.mode
	if cfg.nodeID != "" {
		prefix += " " + cfg.nodeID
	}
	log.SetPrefix(prefix + "] ")

	stop, err := start(cfg)
	if err != nil {
		log.Fatal(err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	log.Printf("received %v, stopping", <-sig)
	stop()
}

// start validates cfg, listens on the CSI socket (and, in node mode, on the kubelet registration socket) and
// serves them in the background. The returned function stops both servers and removes their sockets.
func start(cfg config) (func(), error) {
	if cfg.mode != "controller" && cfg.mode != "node" {
		return nil, fmt.Errorf("--mode must be controller or node, not %q", cfg.mode)
	}
	if cfg.stateDir == "" {
		return nil, errors.New("--state-dir is required")
	}
	if cfg.mode == "node" && cfg.nodeID == "" {
		return nil, errors.New("--node-id is required in node mode")
	}
	socket, ok := strings.CutPrefix(cfg.endpoint, "unix://")
	if !ok || socket == "" {
		return nil, fmt.Errorf("--endpoint must be unix:///path, not %q", cfg.endpoint)
	}
	st, err := openStore(cfg.stateDir)
	if err != nil {
		return nil, err
	}

	srv := grpc.NewServer(grpc.UnaryInterceptor(logCall))
	csi.RegisterIdentityServer(srv, &identityServer{})
	if cfg.mode == "controller" {
		// Only the controller creates temporary copies, so only it may clean up after a crash.
		if err := st.removeStaleTemps(); err != nil {
			return nil, err
		}
		csi.RegisterControllerServer(srv, &controllerServer{st: st})
	} else {
		csi.RegisterNodeServer(srv, &nodeServer{st: st, nodeID: cfg.nodeID})
	}
	lis, err := listenUnix(socket)
	if err != nil {
		return nil, err
	}
	go func() {
		if err := srv.Serve(lis); err != nil {
			log.Printf("CSI server stopped: %v", err)
		}
	}()
	log.Printf("serving %s %s on %s, state in %s", driverName, version, socket, cfg.stateDir)

	// The kubelet calls NodeGetInfo on the CSI socket as soon as it sees the registration socket, so the
	// registration socket appears only once the CSI socket is being served.
	var reg *grpc.Server
	var regSocket string
	if cfg.mode == "node" && cfg.registrationDir != "" {
		reg, regSocket, err = startRegistration(cfg.registrationDir, socket)
		if err != nil {
			srv.Stop()
			_ = os.Remove(socket)
			return nil, err
		}
	}

	return func() {
		// Remove the registration socket first: the kubelet then deregisters the driver before it goes away.
		if reg != nil {
			stopGracefully(reg)
			_ = os.Remove(regSocket)
		}
		stopGracefully(srv)
		_ = os.Remove(socket)
	}, nil
}

// listenUnix removes a stale socket left by a killed instance (listen would fail with EADDRINUSE) and listens.
func listenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	return net.Listen("unix", path)
}

// stopGracefully lets calls under way finish, but not for ever: a copy of a large volume must not hold up
// SIGTERM past the lab's patience.
func stopGracefully(s *grpc.Server) {
	done := make(chan struct{})
	go func() { s.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.Stop()
	}
}

// logCall logs one line per gRPC call: method, the ids it is about, how long it took, and its error.
func logCall(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	begin := time.Now()
	resp, err := handler(ctx, req)
	var ids []string
	add := func(key, value string) {
		if value != "" {
			ids = append(ids, key+"="+value)
		}
	}
	if r, ok := req.(interface{ GetName() string }); ok {
		add("name", r.GetName())
	}
	if r, ok := req.(interface{ GetVolumeId() string }); ok {
		add("volume", r.GetVolumeId())
	}
	if r, ok := req.(interface{ GetSourceVolumeId() string }); ok {
		add("source", r.GetSourceVolumeId())
	}
	if r, ok := req.(interface{ GetSnapshotId() string }); ok {
		add("snapshot", r.GetSnapshotId())
	}
	if r, ok := req.(interface{ GetNodeId() string }); ok {
		add("node", r.GetNodeId())
	}
	if r, ok := req.(interface{ GetTargetPath() string }); ok {
		add("target", r.GetTargetPath())
	}
	result := "ok"
	if err != nil {
		s, _ := status.FromError(err)
		result = fmt.Sprintf("error %s: %s", s.Code(), s.Message())
	}
	log.Printf("%s %s%s %s", info.FullMethod, strings.Join(append(ids, ""), " "), time.Since(begin).Round(time.Microsecond), result)
	return resp, err
}

// identityServer answers the same in both modes.
type identityServer struct {
	csi.UnimplementedIdentityServer
}

func (*identityServer) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: driverName, VendorVersion: version}, nil
}

func (*identityServer) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{
		{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{
			Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}}},
		// Expansion only rewrites meta.json (and grows block.img), which is safe while the volume is in use,
		// so say so: the CSI spec lets a CO read this as "no need to unpublish the volume to expand it".
		{Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{
			Type: csi.PluginCapability_VolumeExpansion_ONLINE}}},
	}}, nil
}

func (*identityServer) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}
