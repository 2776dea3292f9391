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

// Command tour is a guided tour of github.com/kubeinformers/informers: the
// client-go API it keeps and what it adds, one short function per idea.
//
//	go run ./examples/tour                              # in-memory demo cluster
//	go run ./examples/tour --kubeconfig ~/.kube/config  # a real cluster, read-only
//
// Without --kubeconfig and without $KUBECONFIG it runs against client-go's
// fake clientsets (typed, dynamic and metadata) seeded with a small shop:
// three namespaces, deployments, pods, services, config maps and a custom
// resource, widgets.example.com. In order, it shows
//
//  1. New, and the error it returns for a bad option (NewForConfig on a real
//     cluster);
//  2. typed informers, handlers and listers, exactly as in client-go;
//  3. lean caches (WithLeanMemory): no managedFields;
//  4. ForResource for a custom resource (a dynamic informer) and
//     ForMetadata;
//  5. Ready and SyncStatus, an informer that cannot sync, and RemoveInformer;
//  6. WithNamespaces and WithResourceOptions (with
//     TransformStripManagedFields);
//  7. sharding with WithShardSelector, client-go v0.38's option;
//  8. on the demo cluster, a few changes and the events they cause.
//
// The informers' own log lines (klog, on stderr) are off unless -logs: the
// tour prints what they report, such as the failed list of section 5.
//
// With --kubeconfig or $KUBECONFIG it does the same against that cluster but
// only lists and watches: no objects are created, changed or deleted; its
// custom resource is customresourcedefinitions.apiextensions.k8s.io, which
// every cluster serves. ~/.kube/config is never picked up implicitly; pass it
// with --kubeconfig.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of a cluster to watch, read-only (default $KUBECONFIG; with neither, use an in-memory demo cluster)")
	logs := flag.Bool("logs", false, "also print the log lines of the informers (klog, on stderr); the tour prints what they report")
	klog.InitFlags(nil)
	flag.Parse()
	if !*logs {
		quietLogs()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := mainErr(ctx, os.Stdout, *kubeconfig)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tour:", err)
		os.Exit(1)
	}
}

// quietLogs drops klog's output. The tour expects some of what informers
// log, such as the failed list of section 5, and prints it itself.
func quietLogs() {
	for name, value := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL"} {
		if err := flag.Set(name, value); err != nil {
			panic(err) // klog.InitFlags registered them
		}
	}
	klog.SetOutput(io.Discard)
}

// cluster is what the tour runs against.
type cluster struct {
	name string
	// constructor names what newFactory calls, for the output.
	constructor string
	// newFactory builds a factory for this cluster with options:
	// informers.New with the demo's fake clients, or informers.NewForConfig.
	newFactory func(options ...informers.SharedInformerOption) (informers.Factory, error)
	// client reaches the same cluster, for the demo's writes and to compare
	// the cache with what the API serves.
	client kubernetes.Interface
	// writable is true for the demo cluster: only there does the tour write.
	writable bool
	q        queries
}

func mainErr(ctx context.Context, out io.Writer, kubeconfig string) error {
	var c cluster
	if kubeconfig == "" && os.Getenv("KUBECONFIG") == "" {
		demo, err := newDemoClients()
		if err != nil {
			return err
		}
		c = demo.cluster()
	} else {
		fromConfig, err := realCluster(kubeconfig)
		if err != nil {
			return err
		}
		c = fromConfig
	}
	fmt.Fprintln(out, "cluster:", c.name)
	return run(ctx, out, c)
}
