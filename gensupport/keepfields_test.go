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

package gensupport_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	gadgetsv1 "github.com/kubeinformers/informers/examples/crd/apis/gadgets/v1"
	crdfake "github.com/kubeinformers/informers/examples/crd/client/clientset/versioned/fake"
	"github.com/kubeinformers/informers/examples/crd/client/informers/externalversions"
)

// TestKeepFieldsGeneratedType: KeepFields on a resource of the user's own
// generated types (bound through externalversions.New) caches the kept
// fields and the always-kept metadata, for the objects listed and for
// those that arrive by watch; the lister returns them projected.
func TestKeepFieldsGeneratedType(t *testing.T) {
	gadget := func(name string, replicas int32) *gadgetsv1.Gadget {
		return &gadgetsv1.Gadget{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: "7", Generation: 2,
				Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "dropped"},
				Finalizers: []string{"gadgets.example.com/guard"},
			},
			Spec:   gadgetsv1.GadgetSpec{ClassName: "small", Replicas: replicas, Paused: true},
			Status: gadgetsv1.GadgetStatus{ObservedGeneration: 2, ReadyReplicas: replicas, Phase: "Running"},
		}
	}
	projected := func(g *gadgetsv1.Gadget) *gadgetsv1.Gadget {
		m := g.ObjectMeta
		return &gadgetsv1.Gadget{
			ObjectMeta: metav1.ObjectMeta{
				Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, Generation: m.Generation,
				Labels: m.Labels, Finalizers: m.Finalizers,
			},
			Spec:   gadgetsv1.GadgetSpec{Replicas: g.Spec.Replicas},
			Status: gadgetsv1.GadgetStatus{Phase: g.Status.Phase},
		}
	}
	listed := gadget("listed", 3)
	client := crdfake.NewSimpleClientset(listed)
	factory, err := informers.New(fake.NewClientset(), 0,
		informers.WithResourceOptions(gadgetsGVR, informers.ResourceOptions{KeepFields: []string{"spec.replicas", "status.phase"}}))
	if err != nil {
		t.Fatal(err)
	}
	view, err := externalversions.New(factory, client)
	if err != nil {
		t.Fatal(err)
	}
	gadgets := view.Gadgets().V1().Gadgets()
	events := make(chan *gadgetsv1.Gadget, 4)
	if _, err := gadgets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { events <- obj.(*gadgetsv1.Gadget) },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	factory.Start(ctx.Done())
	if err := factory.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		t.Fatal(err)
	}
	watched := gadget("watched", 5)
	if _, err := client.GadgetsV1().Gadgets("ns").Create(ctx, watched, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []*gadgetsv1.Gadget{listed, watched} {
		select {
		case got := <-events:
			if !apiequality.Semantic.DeepEqual(got, projected(want)) {
				t.Errorf("the handler got %#v\nwant %#v", got, projected(want))
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no add event for %s in 30 s", want.Name)
		}
		got, err := gadgets.Lister().Gadgets("ns").Get(want.Name)
		if err != nil || !apiequality.Semantic.DeepEqual(got, projected(want)) {
			t.Errorf("the lister's %s: %#v, %v\nwant %#v", want.Name, got, err, projected(want))
		}
	}
}

// TestKeepFieldsGeneratedTypeBadPath: a path that is not a field of the
// generated type keeps its informer from running, and Ready names the
// resource and the path: the type is known when the view binds it, after
// New, so the error is Ready's, not New's.
func TestKeepFieldsGeneratedTypeBadPath(t *testing.T) {
	factory, err := informers.New(fake.NewClientset(), 0,
		informers.WithResourceOptions(gadgetsGVR, informers.ResourceOptions{KeepFields: []string{"spec.classname"}}))
	if err != nil {
		t.Fatalf("New: %v (a custom resource's paths are checked for syntax only there)", err)
	}
	view, err := externalversions.New(factory, crdfake.NewSimpleClientset(&gadgetsv1.Gadget{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns"}}))
	if err != nil {
		t.Fatal(err)
	}
	inf := view.Gadgets().V1().Gadgets().Informer()
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	factory.Start(ctx.Done())
	err = factory.Ready()
	if err == nil || !strings.Contains(err.Error(), `"spec.classname"`) || !strings.Contains(err.Error(), gadgetsGVR.String()) {
		t.Errorf("Ready: %v, want the resource and the bad path named", err)
	}
	if keys := inf.GetStore().ListKeys(); len(keys) != 0 {
		t.Errorf("the informer with a bad path cached %v, want it not to run", keys)
	}
}
