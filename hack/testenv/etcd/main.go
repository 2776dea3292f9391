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
// go.etcd.io/etcd/server/v3/embed, used only by the test environments: the
// e2e harness (test/e2e/testenv) and controller-runtime's envtest, which
// hack/crsuite.sh points at it.
//
// Its flags are a subset of etcd's own, with etcd's meaning: URL lists are
// comma-separated, and `--help` lists every flag with two dashes as etcd's
// does, since envtest looks there for --unsafe-no-fsync before passing it.
// Unlike etcd's, --advertise-client-urls defaults to --listen-client-urls
// (etcd refuses the one without the other) and --initial-advertise-peer-urls
// to --listen-peer-urls.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// urlsFlag is a comma-separated list of URLs, as etcd's --*-urls flags take.
type urlsFlag struct {
	urls []url.URL
	set  bool
}

func newURLsFlag(def string) *urlsFlag {
	f := &urlsFlag{}
	if err := f.Set(def); err != nil {
		panic(err)
	}
	f.set = false
	return f
}

func (f *urlsFlag) String() string {
	if f == nil {
		return ""
	}
	s := make([]string, len(f.urls))
	for i, u := range f.urls {
		s[i] = u.String()
	}
	return strings.Join(s, ",")
}

// Set parses the list as etcd's types.NewURLs does: every URL has a scheme
// etcd serves and, for http and https, a host:port and no path.
func (f *urlsFlag) Set(v string) error {
	var urls []url.URL
	for _, s := range strings.Split(v, ",") {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		switch u.Scheme {
		case "http", "https":
			if u.Port() == "" {
				return fmt.Errorf("URL %q has no port", s)
			}
			if u.Path != "" {
				return fmt.Errorf("URL %q has a path", s)
			}
		case "unix", "unixs":
		default:
			return fmt.Errorf("URL %q: scheme must be http, https, unix or unixs", s)
		}
		urls = append(urls, *u)
	}
	f.urls, f.set = urls, true
	return nil
}

// options are the parsed flags.
type options struct {
	cfg     *embed.Config
	version bool
}

// parseFlags parses args (without the program name) into an embed.Config.
func parseFlags(args []string, out io.Writer) (options, error) {
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	// Errors are main's to print, once; the help is printed below.
	fs.SetOutput(io.Discard)
	dataDir := fs.String("data-dir", "", "Path to the data directory (required).")
	listenClient := newURLsFlag("http://127.0.0.1:2379")
	fs.Var(listenClient, "listen-client-urls", "List of URLs to listen on for client traffic.")
	advertiseClient := &urlsFlag{}
	fs.Var(advertiseClient, "advertise-client-urls", "List of this member's client URLs to advertise to the public (default: --listen-client-urls).")
	listenPeer := newURLsFlag("http://127.0.0.1:2380")
	fs.Var(listenPeer, "listen-peer-urls", "List of URLs to listen on for peer traffic.")
	advertisePeer := &urlsFlag{}
	fs.Var(advertisePeer, "initial-advertise-peer-urls", "List of this member's peer URLs to advertise to the rest of the cluster (default: --listen-peer-urls).")
	name := fs.String("name", "default", "Human-readable name for this member.")
	quota := fs.Int64("quota-backend-bytes", 2<<30, "Raise alarms when backend size exceeds the given quota.")
	noFsync := fs.Bool("unsafe-no-fsync", false, "Disables fsync, unsafe, will cause data loss.")
	logLevel := fs.String("log-level", "warn", "Configures log level. Only supports debug, info, warn, error, panic, or fatal.")
	version := fs.Bool("version", false, "Print the version and exit.")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(out, fs)
		}
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if *version {
		return options{version: true}, nil
	}
	if *dataDir == "" {
		return options{}, errors.New("--data-dir is required")
	}
	if !advertiseClient.set {
		advertiseClient.urls = listenClient.urls
	}
	if !advertisePeer.set {
		advertisePeer.urls = listenPeer.urls
	}

	cfg := embed.NewConfig()
	cfg.Name = *name
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = listenClient.urls
	cfg.AdvertiseClientUrls = advertiseClient.urls
	cfg.ListenPeerUrls = listenPeer.urls
	cfg.AdvertisePeerUrls = advertisePeer.urls
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.QuotaBackendBytes = *quota
	cfg.UnsafeNoFsync = *noFsync
	cfg.LogLevel = *logLevel
	cfg.Logger = "zap"
	cfg.LogOutputs = []string{"stderr"}
	// The test harness compacts explicitly; keep etcd from doing it on its own.
	cfg.AutoCompactionRetention = "0"
	return options{cfg: cfg}, nil
}

// usage lists every flag with two dashes, as etcd's --help does: envtest
// looks for "--unsafe-no-fsync" there.
func usage(out io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(out, "Usage: etcd [flags]\n\nflags:\n")
	fs.VisitAll(func(f *flag.Flag) {
		fmt.Fprintf(out, "  --%s\n\t%s", f.Name, f.Usage)
		if f.DefValue != "" && f.DefValue != "false" {
			fmt.Fprintf(out, " (default %q)", f.DefValue)
		}
		fmt.Fprintln(out)
	})
}

func main() {
	opts, err := parseFlags(os.Args[1:], os.Stdout)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return
	case err != nil:
		fmt.Fprintf(os.Stderr, "etcd: %v (etcd --help lists the flags)\n", err)
		os.Exit(2)
	case opts.version:
		fmt.Println("etcd (embed) server/v3")
		return
	}
	if err := serve(opts.cfg); err != nil {
		log.Fatal(err)
	}
}

// serve runs etcd until SIGINT or SIGTERM, or until etcd fails; returning
// (rather than exiting) lets the deferred Close stop it cleanly.
func serve(cfg *embed.Config) error {
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
		log.Printf("etcd ready, serving clients on %s", urlList(cfg.ListenClientUrls))
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

func urlList(urls []url.URL) string {
	return (&urlsFlag{urls: urls}).String()
}
