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

// Command sharded is a controller whose replicas split the objects of a
// resource between them with the API server's sharded list and watch
// (KEP-5866) and coordination.k8s.io/v1 Leases: each replica holds a Lease
// through a [sharding.Membership], and its informer factory
// ([informers.WithShardMembership]) caches only the hash ranges the live
// members assign it. It logs its ranges on every change and its cache size
// every few seconds.
//
//	go run ./examples/sharded --kubeconfig ~/.kube/config -replicas 3
//	go run ./examples/sharded --kubeconfig ~/.kube/config -identity replica-a
//
// -replicas N runs N replicas in this one process (a demonstration: stop
// it with Ctrl-C and each releases its Lease); -identity runs one replica,
// which is how it is deployed. Inside a pod, without --kubeconfig, it uses
// the in-cluster configuration and the pod name ($POD_NAME, else the host
// name) as its identity. Without either it prints its usage and exits 2.
//
// # Deployment
//
// Run it as a Deployment (or a StatefulSet, whose stable pod names make the
// assignment stable across restarts) with any number of replicas; scaling
// the Deployment re-shards within one lease duration on a crash, at once on
// a graceful stop (SIGTERM releases the Lease):
//
//	env:
//	- name: POD_NAME
//	  valueFrom: {fieldRef: {fieldPath: metadata.name}}
//	args: ["-lease-namespace", "my-ns", "-resource", "v1/configmaps"]
//
// # RBAC
//
// A Role in the lease namespace:
//
//   - apiGroups: ["coordination.k8s.io"]
//     resources: ["leases"]
//     verbs: ["get", "list", "watch", "create", "update", "delete"]
//
// and a ClusterRole (or a Role per watched namespace) for the resource:
//
//   - apiGroups: [""]
//     resources: ["configmaps"]
//     verbs: ["list", "watch"]
//
// The API server needs the ShardedListAndWatch feature gate (alpha in
// Kubernetes 1.36) to filter on its side; without it every replica still
// caches exactly its shard, filtering on the client, and says so once in
// its log.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/sharding"
)

type options struct {
	kubeconfig     string
	replicas       int
	identity       string
	leaseNamespace string
	controller     string
	namespace      string
	resource       string
	leaseDuration  time.Duration
	renewInterval  time.Duration
	report         time.Duration
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "sharded:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("sharded", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "path to a kubeconfig (default $KUBECONFIG; in a pod, the in-cluster configuration)")
	fs.IntVar(&o.replicas, "replicas", 0, "run this many replicas in this process, named replica-0...")
	fs.StringVar(&o.identity, "identity", "", "run one replica with this identity (default $POD_NAME, else the host name)")
	fs.StringVar(&o.leaseNamespace, "lease-namespace", "default", "namespace of the member Leases")
	fs.StringVar(&o.controller, "controller", "sharded-example", "controller name: the Leases' "+sharding.LabelController+" label")
	fs.StringVar(&o.namespace, "namespace", "", "namespace to watch (default all)")
	fs.StringVar(&o.resource, "resource", "v1/configmaps", "resource to shard, as version/resource or group/version/resource")
	fs.DurationVar(&o.leaseDuration, "lease-duration", sharding.DefaultLeaseDuration, "lease duration (whole seconds)")
	fs.DurationVar(&o.renewInterval, "renew-interval", sharding.DefaultRenewInterval, "lease renewal interval")
	fs.DurationVar(&o.report, "report", 5*time.Second, "how often to log the cache sizes")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: sharded --kubeconfig PATH [-replicas N | -identity NAME] [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}

	gvr, err := parseResource(o.resource)
	if err != nil {
		return err
	}
	ids, err := identities(o)
	if err != nil {
		return err
	}
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		fs.Usage()
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client for %s: %w", cfg.Host, err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, len(ids))
	for _, id := range ids {
		wg.Go(func() {
			if err := replica(ctx, cfg, client, gvr, id, o); err != nil {
				errs <- fmt.Errorf("replica %s: %w", id, err)
				stop()
			}
		})
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

func parseResource(s string) (schema.GroupVersionResource, error) {
	parts := strings.Split(s, "/")
	switch len(parts) {
	case 2:
		return schema.GroupVersionResource{Version: parts[0], Resource: parts[1]}, nil
	case 3:
		return schema.GroupVersionResource{Group: parts[0], Version: parts[1], Resource: parts[2]}, nil
	}
	return schema.GroupVersionResource{}, fmt.Errorf("-resource %q: want version/resource or group/version/resource", s)
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return rest.InClusterConfig()
	}
	return nil, errors.New("no cluster: pass --kubeconfig (or set $KUBECONFIG), or run in a pod")
}

func identities(o options) ([]string, error) {
	switch {
	case o.replicas > 0 && o.identity != "":
		return nil, errors.New("-replicas and -identity exclude each other")
	case o.replicas < 0:
		return nil, fmt.Errorf("-replicas %d: want at least 1", o.replicas)
	case o.replicas > 0:
		ids := make([]string, o.replicas)
		for i := range ids {
			ids[i] = fmt.Sprintf("replica-%d", i)
		}
		return ids, nil
	case o.identity != "":
		return []string{o.identity}, nil
	}
	if id := os.Getenv("POD_NAME"); id != "" {
		return []string{id}, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("no identity: pass -identity or set $POD_NAME: %w", err)
	}
	if host == "" {
		return nil, errors.New("no identity: pass -identity or set $POD_NAME (the host name is empty)")
	}
	return []string{host}, nil
}

// replica runs one member until ctx ends, then releases its Lease.
func replica(ctx context.Context, cfg *rest.Config, client kubernetes.Interface, gvr schema.GroupVersionResource, id string, o options) error {
	logger := klog.Background().WithValues("replica", id)
	m, err := sharding.NewMembership(sharding.MembershipConfig{
		Client: client, Namespace: o.leaseNamespace, Controller: o.controller, Identity: id,
		LeaseDuration: o.leaseDuration, RenewInterval: o.renewInterval,
	})
	if err != nil {
		return err
	}
	factory, err := informers.NewForConfig(cfg, 0, informers.WithNamespace(o.namespace), informers.WithShardMembership(m, sharding.FieldUID))
	if err != nil {
		return err
	}
	gi, err := factory.ForResource(gvr)
	if err != nil {
		return err
	}
	inf := gi.Informer()
	// A real controller adds its event handlers here and feeds a workqueue.

	ranges, unsubscribe := m.Subscribe()
	defer unsubscribe()
	if err := m.Start(ctx); err != nil {
		return err
	}
	defer func() {
		// Graceful: the others take this replica's ranges over at once.
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Stop(sctx); err != nil {
			logger.Error(err, "Releasing the Lease")
		}
	}()
	fctx, cancel := context.WithCancel(ctx)
	factory.Start(fctx.Done())
	defer func() { cancel(); factory.Shutdown() }()

	tick := time.NewTicker(o.report)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			logger.Info("Stopping; releasing the Lease")
			return nil
		case r, ok := <-ranges:
			if !ok {
				return nil
			}
			logger.Info("Assignment changed", "ranges", r, "members", m.Members())
		case <-tick.C:
			logger.Info("Cache", "resource", gvr.String(), "objects", len(inf.GetStore().ListKeys()), "ranges", m.Ranges(), "ready", errString(factory.Ready()), "notices", factory.Notices())
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
