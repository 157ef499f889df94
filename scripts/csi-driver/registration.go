package main

import (
	"context"
	"log"
	"path/filepath"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// registrationServer does in-process what node-driver-registrar does in a pod: the kubelet watches its
// plugins_registry directory, finds our socket there, asks GetInfo where the CSI socket is, registers the
// driver (calling NodeGetInfo on it and writing the CSINode object) and reports back.
type registrationServer struct {
	registerapi.UnimplementedRegistrationServer
	csiSocket string
}

func (r *registrationServer) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              driverName,
		Endpoint:          r.csiSocket, // a plain path: the kubelet adds unix:// itself
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

func (r *registrationServer) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if s.PluginRegistered {
		log.Printf("kubelet registered %s", driverName)
	} else {
		log.Printf("kubelet failed to register %s: %s", driverName, s.Error)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// startRegistration serves the registration API on <dir>/csi.storbench.local-reg.sock.
func startRegistration(dir, csiSocket string) (*grpc.Server, string, error) {
	abs, err := filepath.Abs(csiSocket)
	if err != nil {
		return nil, "", err
	}
	socket := filepath.Join(dir, driverName+"-reg.sock")
	lis, err := listenUnix(socket)
	if err != nil {
		return nil, "", err
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(logCall))
	registerapi.RegisterRegistrationServer(srv, &registrationServer{csiSocket: abs})
	go func() {
		if err := srv.Serve(lis); err != nil {
			log.Printf("registration server stopped: %v", err)
		}
	}()
	log.Printf("registration socket %s", socket)
	return srv, socket, nil
}
