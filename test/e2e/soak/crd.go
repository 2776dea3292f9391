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
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/test/e2e/testenv"
)

// The custom resource the "CRD deleted and created again" fault takes away
// and brings back under a running informer.
var (
	crdGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetGVR = schema.GroupVersionResource{Group: "soak.kubeinformers.io", Version: "v1", Resource: "widgets"}
)

// Goals of the CRD fault, as docs/api-discovery.md promises them: the
// informer empties its cache within 10 s of its resource going, and syncs
// within 10 s of it being served again.
const (
	maxEmptied = 10 * time.Second
	maxSynced  = 10 * time.Second
	// widgetsPerNamespace are created with the CRD, each time.
	widgetsPerNamespace = 5
)

// customCache is a factory with WithAPIDiscovery over the soak's
// namespaces and its dynamic informer of widgets, whose CRD the fault
// deletes and creates again. Its handlers count the events.
type customCache struct {
	factory informers.Factory
	inf     cache.SharedIndexInformer
	id      informers.InformerID
	conns   *conns
	dyn     dynamic.Interface
	cancel  context.CancelFunc

	adds, deletes atomic.Int64
}

func (s *soak) startCustom(ctx context.Context) (*customCache, error) {
	c := &customCache{conns: &conns{}, dyn: dynamic.NewForConfigOrDie(s.env.AdminConfig())}
	if _, err := installCRD(ctx, c.dyn, widgetGVR, "Widget", s.nss); err != nil {
		return nil, err
	}
	f, err := informers.NewForConfig(c.conns.install(s.env.AdminConfig()), 0,
		informers.WithNamespaces(s.nss...), informers.WithAPIDiscovery())
	if err != nil {
		return nil, err
	}
	gi, err := f.ForResource(widgetGVR)
	if err != nil {
		return nil, err
	}
	c.factory, c.inf = f, gi.Informer()
	c.id = informers.InformerID{Form: informers.FormDynamic, Resource: widgetGVR, Type: unstructuredType}
	if _, err := c.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.adds.Add(1) },
		DeleteFunc: func(any) { c.deletes.Add(1) },
	}); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	c.cancel = cancel
	f.Start(cctx.Done())
	return c, nil
}

func (c *customCache) close() {
	c.cancel()
	c.factory.Shutdown()
}

// installCRD creates the CRD of gvr (its kind kind), waits until its
// resource is served and creates widgetsPerNamespace objects in each of
// nss. It returns when the resource was first served.
func installCRD(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, kind string, nss []string) (served time.Time, err error) {
	if _, err := dyn.Resource(crdGVR).Create(ctx, testenv.CRD(gvr.Group, gvr.Resource, kind), metav1.CreateOptions{}); err != nil {
		return served, fmt.Errorf("create the CRD %s: %w", gvr.GroupResource(), err)
	}
	// Established is not enough: the handler serves a little later.
	if err := poll(ctx, time.Minute, func() (bool, error) {
		_, err := dyn.Resource(gvr).Namespace(nss[0]).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	}); err != nil {
		return served, fmt.Errorf("the CRD %s created, its resource not served: %w", gvr.GroupResource(), err)
	}
	served = time.Now()
	for _, ns := range nss {
		for i := range widgetsPerNamespace {
			o := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"n": int64(i)}}}
			o.SetAPIVersion(gvr.GroupVersion().String())
			o.SetKind(kind)
			o.SetName(fmt.Sprintf("w-%d", i))
			if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, o, metav1.CreateOptions{}); err != nil {
				return served, fmt.Errorf("create %s %s/w-%d: %w", gvr.Resource, ns, i, err)
			}
		}
	}
	return served, nil
}

// uninstallCRD deletes the CRD of gvr and waits until the server has
// removed it (and, with it, every object of gvr).
func uninstallCRD(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource) error {
	name := gvr.GroupResource().String()
	if err := dyn.Resource(crdGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete the CRD %s: %w", name, err)
	}
	return poll(ctx, time.Minute, func() (bool, error) {
		_, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// restoreCRD creates the CRD of gvr again after a failed cycle if it is
// gone, so that the next cycles run, and adds what that failed to err.
func restoreCRD(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, kind string, nss []string, err error) error {
	if _, gerr := dyn.Resource(crdGVR).Get(ctx, gvr.GroupResource().String(), metav1.GetOptions{}); apierrors.IsNotFound(gerr) {
		if _, ierr := installCRD(ctx, dyn, gvr, kind, nss); ierr != nil {
			return fmt.Errorf("%w; creating it again: %w", err, ierr)
		}
	}
	return err
}

// cycle is the fault: the CRD is deleted, and the informer must empty its
// cache with a delete event per widget and wait for its resource; then it
// is created again with new widgets, and the informer must sync and hold
// them. It returns how long each took: from the delete request to the
// informer empty and waiting, and from the resource being served again to
// the informer synced.
func (c *customCache) cycle(ctx context.Context, nss []string) (emptied, synced time.Duration, err error) {
	held := len(c.inf.GetStore().ListKeys())
	d0 := c.deletes.Load()
	t0 := time.Now()
	if err := uninstallCRD(ctx, c.dyn, widgetGVR); err != nil {
		return 0, 0, err
	}
	// The server deletes the widgets before the CRD, so the cache can be
	// empty before the informer sees its resource go: both count.
	if err := poll(ctx, time.Minute, func() (bool, error) {
		return len(c.inf.GetStore().ListKeys()) == 0 && !c.factory.SyncStatus()[c.id], nil
	}); err != nil {
		return 0, 0, fmt.Errorf("the CRD deleted, the informer still holds %d widgets or says synced (%v): %w",
			len(c.inf.GetStore().ListKeys()), c.factory.SyncStatus()[c.id], err)
	}
	emptied = time.Since(t0)
	if got := c.deletes.Load() - d0; got != int64(held) {
		return emptied, 0, fmt.Errorf("the CRD deleted, %d delete events for the %d widgets held", got, held)
	}
	served, err := installCRD(ctx, c.dyn, widgetGVR, "Widget", nss)
	if err != nil {
		return emptied, 0, err
	}
	if err := poll(ctx, time.Minute, func() (bool, error) {
		return c.factory.SyncStatus()[c.id], nil
	}); err != nil {
		return emptied, 0, fmt.Errorf("the CRD created again, the informer did not sync: %w", err)
	}
	synced = time.Since(served)
	// And it holds the new widgets, through its watch.
	want := len(nss) * widgetsPerNamespace
	if err := poll(ctx, time.Minute, func() (bool, error) {
		return len(c.inf.GetStore().ListKeys()) == want, nil
	}); err != nil {
		return emptied, synced, fmt.Errorf("the CRD created again, the informer holds %d widgets, want %d: %w", len(c.inf.GetStore().ListKeys()), want, err)
	}
	return emptied, synced, nil
}

// poll calls done every 100 ms until it returns true, fails, or timeout
// passes.
func poll(ctx context.Context, timeout time.Duration, done func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not done in %v", timeout)
		case <-t.C:
		}
	}
}

// checkCustom compares the custom cache with the server's widgets, as
// check does the configmap caches.
func (s *soak) checkCustom(ctx context.Context) (lost, stale int, detail string, err error) {
	server := map[string]string{}
	for _, ns := range s.nss {
		list, err := s.custom.dyn.Resource(widgetGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			break // the CRD is gone (a cycle failed): no widgets
		}
		if err != nil {
			return 0, 0, "", err
		}
		for _, w := range list.Items {
			server[w.GetNamespace()+"/"+w.GetName()] = w.GetResourceVersion()
		}
	}
	store := s.custom.inf.GetStore()
	for k, rv := range server {
		obj, ok, _ := store.GetByKey(k)
		switch {
		case !ok:
			lost++
			detail = "widget " + k + " is missing from the custom cache"
		case obj.(*unstructured.Unstructured).GetResourceVersion() != rv:
			stale++
			detail = fmt.Sprintf("the custom cache has widget %s at resourceVersion %s, the server %s", k, obj.(*unstructured.Unstructured).GetResourceVersion(), rv)
		}
	}
	for _, k := range store.ListKeys() {
		if _, ok := server[k]; !ok {
			stale++
			detail = "the custom cache still holds widget " + k + ", deleted on the server"
		}
	}
	return lost, stale, detail, nil
}

// recreateCRD is the fault of the schedule: one cycle, its figures kept
// for the result.
func (s *soak) recreateCRD(ctx context.Context, _ int) error {
	emptied, synced, err := s.custom.cycle(ctx, s.nss)
	if err != nil {
		err = restoreCRD(ctx, s.custom.dyn, widgetGVR, "Widget", s.nss, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.counts.crdFailures++
		return err
	}
	s.counts.crdCycles++
	s.crdEmptied = max(s.crdEmptied, emptied)
	s.crdSynced = max(s.crdSynced, synced)
	s.log.logf("CRD %s deleted: informer empty (a delete event per widget) and waiting %.2fs after the delete request; created again: synced %.2fs after the resource was served",
		widgetGVR.GroupResource(), emptied.Seconds(), synced.Seconds())
	return nil
}

// unstructuredType is a dynamic informer's object type in an InformerID.
var unstructuredType = reflect.TypeFor[*unstructured.Unstructured]()
