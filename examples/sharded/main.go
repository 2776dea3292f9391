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
// members assign it.
//
//	go run ./examples/sharded --kubeconfig ~/.kube/config -replicas 3
//	go run ./examples/sharded --kubeconfig ~/.kube/config -identity replica-a
//
// -replicas N runs N replicas in this one process (a demonstration: stop
// it with Ctrl-C and each releases its Lease); -identity runs one replica,
// which is how it is deployed. Inside a pod, without --kubeconfig, it uses
// the in-cluster configuration and the pod name ($POD_NAME, else the host
// name) as its identity. Without a cluster, or with a bad flag, it says why
// and exits 2.
//
// # What it logs
//
// At start, the replicas, the resource and where the Leases are (the
// namespace "default" unless -lease-namespace says otherwise). Then, for
// each replica:
//
//	"Shard assignment changed" replica="replica-0" change="replica-1 joined" owns="[0x0000000000000000, 0x8000000000000000), 50% of the hash space" members="replica-0, replica-1"
//	"Cache size" replica="replica-0" resource="configmaps (v1)" objects=512 owns="[0x0000000000000000, 0x8000000000000000), 50% of the hash space" ready="yes"
//
// A change names who joined, who left (released its Lease: a graceful stop)
// and who expired (stopped renewing its Lease: a crash, or a network
// partition). Each replica owns a contiguous range of the 64-bit hash of
// the objects' UIDs, in the bounds the shard selector sends. A "Notice" line
// appears once if the server ignores shard selectors: the replica then
// filters on the client, and still caches exactly its shard.
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
	kubeconfig        string
	replicas          int
	replicasSet       bool
	identity          string
	leaseNamespace    string
	leaseNamespaceSet bool
	controller        string
	namespace         string
	resource          schema.GroupVersionResource
	leaseDuration     time.Duration
	renewInterval     time.Duration
	report            time.Duration
}

// newFactoryFunc builds a factory for the cluster: informers.NewForConfig,
// or informers.New with a fake client in tests.
type newFactoryFunc func(options ...informers.SharedInformerOption) (informers.Factory, error)

func main() {
	err := run(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return // -h: the usage is printed
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sharded:", err)
		os.Exit(2)
	}
}

// run checks the flags, connects and runs the replicas until SIGINT or
// SIGTERM. Bad flags and a missing cluster are errors before any request.
func run(args []string) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	ids, err := identities(o)
	if err != nil {
		return err
	}
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	newFactory := func(options ...informers.SharedInformerOption) (informers.Factory, error) {
		return informers.NewForConfig(cfg, 0, options...)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runReplicas(ctx, klog.Background(), client, newFactory, ids, o)
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("sharded", flag.ContinueOnError)
	var o options
	var resource string
	fs.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "path to a kubeconfig (default $KUBECONFIG; in a pod, the in-cluster configuration)")
	fs.IntVar(&o.replicas, "replicas", 0, "run this many replicas in this process, named replica-0, replica-1, …")
	fs.StringVar(&o.identity, "identity", "", "run one replica with this identity (default $POD_NAME, else the host name)")
	fs.StringVar(&o.leaseNamespace, "lease-namespace", "default", "namespace of the member Leases")
	fs.StringVar(&o.controller, "controller", "sharded-example", "controller name: the Leases' "+sharding.LabelController+" label")
	fs.StringVar(&o.namespace, "namespace", "", "namespace to watch (default all)")
	fs.StringVar(&resource, "resource", "v1/configmaps", "resource to shard, as version/resource or group/version/resource")
	fs.DurationVar(&o.leaseDuration, "lease-duration", sharding.DefaultLeaseDuration, "lease duration (whole seconds)")
	fs.DurationVar(&o.renewInterval, "renew-interval", sharding.DefaultRenewInterval, "lease renewal interval")
	fs.DurationVar(&o.report, "report", 5*time.Second, "how often each replica logs its cache size")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: sharded --kubeconfig PATH [-replicas N | -identity NAME] [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q: every setting is a flag (see -h)", fs.Arg(0))
	}
	fs.Visit(func(f *flag.Flag) {
		o.replicasSet = o.replicasSet || f.Name == "replicas"
		o.leaseNamespaceSet = o.leaseNamespaceSet || f.Name == "lease-namespace"
	})
	var err error
	if o.resource, err = parseResource(resource); err != nil {
		return o, err
	}
	if o.report <= 0 {
		return o, fmt.Errorf("-report %v: want a positive interval", o.report)
	}
	return o, nil
}

func parseResource(s string) (schema.GroupVersionResource, error) {
	parts := strings.Split(s, "/")
	for _, p := range parts {
		if p == "" {
			parts = nil // caught below
		}
	}
	switch len(parts) {
	case 2:
		return schema.GroupVersionResource{Version: parts[0], Resource: parts[1]}, nil
	case 3:
		return schema.GroupVersionResource{Group: parts[0], Version: parts[1], Resource: parts[2]}, nil
	}
	return schema.GroupVersionResource{}, fmt.Errorf("-resource %q: want version/resource, such as v1/configmaps, or group/version/resource, such as apps/v1/deployments", s)
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
	case o.replicasSet && o.replicas < 1:
		return nil, fmt.Errorf("-replicas %d: want 1 or more (or leave it out and pass -identity)", o.replicas)
	case o.replicasSet && o.identity != "":
		return nil, errors.New("-replicas and -identity exclude each other")
	case o.replicasSet:
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

// runReplicas runs one member per identity until ctx ends or one fails.
// The memberships are built first, so a bad -lease-* or -controller flag is
// an error before any request.
func runReplicas(ctx context.Context, logger klog.Logger, client kubernetes.Interface, newFactory newFactoryFunc, ids []string, o options) error {
	members := make([]*sharding.Membership, len(ids))
	for i, id := range ids {
		m, err := sharding.NewMembership(sharding.MembershipConfig{
			Client: client, Namespace: o.leaseNamespace, Controller: o.controller, Identity: id,
			LeaseDuration: o.leaseDuration, RenewInterval: o.renewInterval,
		})
		if err != nil {
			return err
		}
		members[i] = m
	}
	logStart(logger, ids, o)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for i, m := range members {
		wg.Go(func() {
			r := &replica{id: ids[i], logger: logger.WithValues("replica", ids[i]), client: client, m: m, o: o}
			if err := r.run(ctx, newFactory); err != nil {
				errs[i] = fmt.Errorf("replica %s: %w", ids[i], err)
				cancel()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// logStart says what the replicas share, and where, before they start.
func logStart(logger klog.Logger, ids []string, o options) {
	watched := "all namespaces"
	if o.namespace != "" {
		watched = "namespace " + o.namespace
	}
	leaseNamespace := o.leaseNamespace
	if !o.leaseNamespaceSet {
		leaseNamespace += " (the default; set it with -lease-namespace)"
	}
	logger.Info("Starting sharded replicas",
		"replicas", strings.Join(ids, ", "),
		"resource", resourceName(o.resource),
		"watching", watched,
		"shardedBy", "hash of "+string(sharding.FieldUID),
		"leaseNamespace", leaseNamespace,
		"leaseLabel", sharding.LabelController+"="+o.controller,
		"leaseDuration", o.leaseDuration.String())
}

// resourceName writes a resource as people do and as the factory's own
// messages do: "configmaps (v1)", "deployments.apps/v1".
func resourceName(gvr schema.GroupVersionResource) string {
	return informers.InformerID{Form: informers.FormTyped, Resource: gvr}.String()
}
