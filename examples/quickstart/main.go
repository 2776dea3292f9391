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

// Command quickstart is a tour of github.com/kubeinformers/informers.
//
//	go run ./examples/quickstart                        # in-memory demo cluster
//	go run ./examples/quickstart --kubeconfig ~/.kube/config  # a real cluster, read-only
//
// Without --kubeconfig and without $KUBECONFIG it runs against a fake
// clientset (k8s.io/client-go/kubernetes/fake) seeded with a small shop:
// three namespaces, deployments, pods, services and config maps. It builds a
// shared informer factory, registers typed event handlers, waits for the
// caches, queries them through listers and ForResource, then changes a few
// objects and prints the events the handlers receive.
//
// With --kubeconfig or $KUBECONFIG it does the same against that cluster but
// only lists and watches: no objects are created, changed or deleted.
// ~/.kube/config is never picked up implicitly; pass it with --kubeconfig.
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
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of a cluster to watch, read-only (default $KUBECONFIG; with neither, use an in-memory demo cluster)")
	klog.InitFlags(nil)
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := mainErr(ctx, os.Stdout, *kubeconfig)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func mainErr(ctx context.Context, out io.Writer, kubeconfig string) error {
	if kubeconfig == "" && os.Getenv("KUBECONFIG") == "" {
		fmt.Fprintln(out, "cluster: in-memory demo (fake clientset, seeded); pass --kubeconfig to watch a real cluster")
		return run(ctx, out, fake.NewClientset(demoObjects()...), true)
	}

	config, contextName, err := loadKubeconfig(kubeconfig)
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	config.UserAgent = "kubeinformers-quickstart"
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "cluster: %s (context %q), read-only\n", config.Host, contextName)
	return run(ctx, out, client, false)
}
