/*
Copyright The kubeinformers Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command etcd is a minimal single-member etcd server built from
// go.etcd.io/etcd/server/v3/embed, used only by the e2e test environment.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func mustURL(s string) url.URL {
	u, err := url.Parse(s)
	if err != nil {
		log.Fatalf("bad url %q: %v", s, err)
	}
	return *u
}

func main() {
	dataDir := flag.String("data-dir", "", "directory for etcd data (required)")
	clientURL := flag.String("listen-client-urls", "http://127.0.0.1:2379", "client URL to listen on and advertise")
	peerURL := flag.String("listen-peer-urls", "http://127.0.0.1:2380", "peer URL to listen on and advertise")
	name := flag.String("name", "default", "member name")
	quota := flag.Int64("quota-backend-bytes", 2<<30, "backend quota in bytes")
	logLevel := flag.String("log-level", "warn", "zap log level")
	version := flag.Bool("version", false, "print version and exit")
	flag.Parse()
	if *version {
		fmt.Println("etcd (embed) server/v3")
		return
	}
	if *dataDir == "" {
		log.Fatal("--data-dir is required")
	}

	cfg := embed.NewConfig()
	cfg.Name = *name
	cfg.Dir = *dataDir
	cu, pu := mustURL(*clientURL), mustURL(*peerURL)
	cfg.ListenClientUrls = []url.URL{cu}
	cfg.AdvertiseClientUrls = []url.URL{cu}
	cfg.ListenPeerUrls = []url.URL{pu}
	cfg.AdvertisePeerUrls = []url.URL{pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.QuotaBackendBytes = *quota
	cfg.LogLevel = *logLevel
	cfg.Logger = "zap"
	cfg.LogOutputs = []string{"stderr"}
	// The test harness compacts explicitly; keep etcd from doing it on its own.
	cfg.AutoCompactionRetention = "0"

	if err := serve(cfg, cu); err != nil {
		log.Fatal(err)
	}
}

// serve runs etcd until SIGINT or SIGTERM, or until etcd fails; returning
// (rather than exiting) lets the deferred Close stop it cleanly.
func serve(cfg *embed.Config, cu url.URL) error {
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
		log.Printf("etcd ready, serving clients on %s", cu.String())
	case <-time.After(60 * time.Second):
		e.Server.Stop()
		return errors.New("etcd took too long to start")
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		log.Printf("received %v, shutting down", s)
		return nil
	case err := <-e.Err():
		return fmt.Errorf("etcd error: %w", err)
	}
}
