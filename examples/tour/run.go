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

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	listersappsv1 "k8s.io/client-go/listers/apps/v1"
	listerscorev1 "k8s.io/client-go/listers/core/v1"

	"github.com/kubeinformers/informers"
)

// Timeouts of the waits. A real cluster may take a while to list
// everything; the demo cluster is in memory.
var (
	syncTimeout   = 60 * time.Second
	eventsTimeout = 10 * time.Second
)

// maxListed caps how many objects a query prints, for big real clusters.
const maxListed = 10

// queries is what the tour looks up.
type queries struct {
	podNamespace, podSelector         string
	serviceNamespace                  string
	configMapNamespace, configMapName string
	// custom is a resource client-go's typed informers do not have.
	custom schema.GroupVersionResource
	// namespaces and narrowSelector narrow the factory of section 6.
	namespaces     []string
	narrowSelector string
}

var (
	// demoQueries fit the seeded demo cluster.
	demoQueries = queries{
		podNamespace: "shop", podSelector: "app=web",
		serviceNamespace:   "payments",
		configMapNamespace: "shop", configMapName: "web-config",
		custom:     widgetsGVR,
		namespaces: []string{"shop", "payments"}, narrowSelector: "app in (web, api)",
	}
	// clusterQueries find something in most real clusters: the DNS pods,
	// the API server's service, the CA bundle every namespace gets and the
	// CRDs.
	clusterQueries = queries{
		podNamespace: "kube-system", podSelector: "k8s-app=kube-dns",
		serviceNamespace:   "default",
		configMapNamespace: "kube-system", configMapName: "kube-root-ca.crt",
		custom:     crdsGVR,
		namespaces: []string{"kube-system", "default"}, narrowSelector: "k8s-app",
	}
)

// tour is the main factory of the tour, its listers and what its
// handlers saw. Each section is one of its methods.
type tour struct {
	out     io.Writer
	c       cluster
	factory informers.Factory
	ctx     context.Context
	cancel  context.CancelFunc
	stopped bool
	rec     *recorder

	namespaces  listerscorev1.NamespaceLister
	nodes       listerscorev1.NodeLister
	deployments listersappsv1.DeploymentLister
	pods        listerscorev1.PodLister
	services    listerscorev1.ServiceLister
	configMaps  listerscorev1.ConfigMapLister
}

// run is the whole tour, one section per idea. On the demo cluster
// (c.writable) it ends by changing a few objects; otherwise it only lists
// and watches.
func run(ctx context.Context, out io.Writer, c cluster) error {
	if err := showNew(out, c); err != nil {
		return err
	}
	t, err := startTour(ctx, out, c)
	if err != nil {
		return err
	}
	defer t.stop()
	sections := []func() error{t.showTyped, t.showLean, t.showCustomAndMetadata, t.showStatus, t.showNarrowed, t.showSharded}
	if c.writable {
		sections = append(sections, t.showChanges)
	}
	for _, section := range sections {
		if err := section(); err != nil {
			return err
		}
	}
	t.stop()
	fmt.Fprintln(out, "\ninformers stopped")
	return nil
}

// heading starts a section of the output.
func heading(out io.Writer, title string) {
	fmt.Fprintf(out, "\n%s\n", title)
}

// showNew builds a factory with an invalid namespace: New and NewForConfig
// return bad options as an error, where client-go's constructor takes any
// value and fails later, on the wire.
func showNew(out io.Writer, c cluster) error {
	heading(out, "1. New and NewForConfig return a bad option as an error")
	_, err := c.newFactory(informers.WithNamespace("Shop"))
	if err == nil {
		return errors.New(`WithNamespace("Shop") was accepted`)
	}
	fmt.Fprintf(out, "  %s(…, WithNamespace(\"Shop\")):\n    %v\n", c.constructor, err)
	return nil
}

// stop stops the informers and waits until their goroutines are gone.
func (t *tour) stop() {
	if !t.stopped {
		t.stopped = true
		t.cancel()           // stops the informers…
		t.factory.Shutdown() // …and waits for them.
	}
}

// waitForSync waits until every informer started so far has synced.
// SyncResult.Err names each one that has not, with its last error.
func waitForSync(ctx context.Context, factory informers.Factory) error {
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	return factory.WaitForCacheSyncWithContext(ctx).AsError()
}
