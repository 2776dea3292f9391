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
	"hash/fnv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubeinformers/informers"
)

// The custom resources of the tour. Widgets are served; gadgets are not
// (their CRD is not installed), on the demo cluster as on most real ones.
// Every cluster serves CRDs, and client-go has no typed informer for them.
var (
	widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	gadgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	crdsGVR    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// demoClients are the in-memory cluster: client-go's fake clientsets for
// typed objects, custom resources (dynamic) and metadata, seeded with the
// same shop. A real API server serves all three from one store; the fakes
// each keep their own, so only the typed one sees the demo's changes.
type demoClients struct {
	typed    *fake.Clientset
	dynamic  *dynamicfake.FakeDynamicClient
	metadata *metadatafake.FakeMetadataClient
}

func newDemoClients() (demoClients, error) {
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		return demoClients{}, err
	}
	d := demoClients{
		typed: fake.NewClientset(demoObjects()...),
		dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{
				widgetsGVR: "WidgetList", gadgetsGVR: "GadgetList", crdsGVR: "CustomResourceDefinitionList",
			},
			demoCustomResources()...),
		metadata: metadatafake.NewSimpleMetadataClient(scheme, demoMetadata()...),
	}
	notServed(&d.dynamic.Fake, gadgetsGVR)
	return d, nil
}

// cluster is the demo cluster for the tour: writable, with queries that fit
// the shop.
func (d demoClients) cluster() cluster {
	return cluster{
		name:        "in-memory demo (fake clientsets, seeded); pass --kubeconfig to watch a real cluster",
		constructor: "informers.New",
		client:      d.typed,
		writable:    true,
		q:           demoQueries,
		newFactory: func(options ...informers.SharedInformerOption) (informers.Factory, error) {
			// The fakes stand in for what NewForConfig builds from a rest.Config.
			clients := []informers.SharedInformerOption{informers.WithDynamicClient(d.dynamic), informers.WithMetadataClient(d.metadata)}
			return informers.New(d.typed, 0, append(clients, options...)...)
		},
	}
}

// notServed makes the fake answer lists and watches of resource as an API
// server answers for a resource it does not serve.
func notServed(f *clienttesting.Fake, resource schema.GroupVersionResource) {
	notFound := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource",
	}}
	f.PrependReactor("*", resource.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, notFound
	})
	f.PrependWatchReactor(resource.Resource, func(clienttesting.Action) (bool, watch.Interface, error) {
		return true, nil, notFound
	})
}

// demoCustomResources are the widgets of the demo cluster and their CRD.
func demoCustomResources() []runtime.Object {
	widget := func(ns, name, color string, size int64) *unstructured.Unstructured {
		w := &unstructured.Unstructured{Object: map[string]any{
			"spec": map[string]any{"color": color, "size": size},
		}}
		w.SetAPIVersion("example.com/v1")
		w.SetKind("Widget")
		w.SetNamespace(ns)
		w.SetName(name)
		w.SetUID(demoUID(ns, name))
		return w
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"group": "example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
		},
	}}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	crd.SetName("widgets.example.com")
	crd.SetUID(demoUID("", crd.GetName()))
	return []runtime.Object{
		crd,
		widget("shop", "banner", "blue", 3),
		widget("shop", "checkout-button", "green", 1),
		widget("payments", "receipt", "white", 2),
	}
}

// demoMetadata is what the metadata API serves of the demo's deployments:
// their metadata only.
func demoMetadata() []runtime.Object {
	var out []runtime.Object
	for _, obj := range demoObjects() {
		if d, ok := obj.(*appsv1.Deployment); ok {
			out = append(out, &metav1.PartialObjectMetadata{
				TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
				ObjectMeta: d.ObjectMeta,
			})
		}
	}
	return out
}

// demoObjects is the in-memory cluster the tour runs on without a
// kubeconfig: a web shop, its payment API and its monitoring, on two nodes.
// Pods carry the labels and owner references a Deployment's ReplicaSet
// gives them.
func demoObjects() []runtime.Object {
	return []runtime.Object{
		namespace("shop", "storefront"),
		namespace("payments", "payments"),
		namespace("monitoring", "platform"),

		node("node-a"),
		node("node-b"),

		deployment("shop", "web", "6d9f7c8b5", "ghcr.io/example/web:1.8.2", 3, 2),
		deployment("shop", "cart", "5b7d9c4f8", "ghcr.io/example/cart:2.1.0", 2, 2),
		deployment("payments", "api", "7f8c6d5b9", "ghcr.io/example/payments-api:4.0.1", 2, 1),
		deployment("monitoring", "prometheus", "84c7b9d6f", "quay.io/prometheus/prometheus:v3.5.0", 1, 1),

		pod("shop", "web", "6d9f7c8b5", "2kq4x", corev1.PodRunning, "node-a"),
		pod("shop", "web", "6d9f7c8b5", "8zt7m", corev1.PodRunning, "node-b"),
		pod("shop", "web", "6d9f7c8b5", "x9c2p", corev1.PodPending, ""),
		pod("shop", "cart", "5b7d9c4f8", "4hn6w", corev1.PodRunning, "node-a"),
		pod("shop", "cart", "5b7d9c4f8", "q7r2d", corev1.PodRunning, "node-b"),
		pod("payments", "api", "7f8c6d5b9", "m3k8v", corev1.PodRunning, "node-b"),
		pod("payments", "api", "7f8c6d5b9", "t5w9j", corev1.PodPending, "node-a"),
		pod("monitoring", "prometheus", "84c7b9d6f", "7vx4n", corev1.PodRunning, "node-a"),

		service("shop", "web", "web", "10.96.10.20", 80, 8080),
		service("shop", "cart", "cart", "10.96.10.21", 80, 8080),
		service("payments", "api", "api", "10.96.20.10", 443, 8443),
		service("payments", "api-headless", "api", corev1.ClusterIPNone, 443, 8443),
		service("monitoring", "prometheus", "prometheus", "10.96.30.5", 9090, 9090),

		configMap("shop", "web-config", map[string]string{"LOG_LEVEL": "info", "THEME": "dark", "CART_URL": "http://cart.shop.svc"}),
		configMap("payments", "api-config", map[string]string{"CURRENCY": "EUR", "PROVIDER": "sandbox"}),
		configMap("monitoring", "prometheus-config", map[string]string{"prometheus.yml": "global:\n  scrape_interval: 30s\n"}),
		configMap("monitoring", "alert-rules", map[string]string{"rules.yml": "groups: []\n"}),
	}
}

// change is one write of the demo burst. Each causes exactly one event in
// the tour's handlers.
type change struct {
	what string
	do   func(ctx context.Context, client kubernetes.Interface) error
}

// demoChanges is what the tour does to the demo cluster once the
// caches are in sync: a rollout replaces a pending web pod, an operator
// raises the log level, a feature flag appears and old alert rules go.
func demoChanges() []change {
	newPod := pod("shop", "web", "6d9f7c8b5", "h4j5k", corev1.PodPending, "node-b")
	return []change{
		{"create pod shop/" + newPod.Name, func(ctx context.Context, client kubernetes.Interface) error {
			_, err := client.CoreV1().Pods("shop").Create(ctx, newPod, metav1.CreateOptions{FieldManager: "tour"})
			return err
		}},
		{"mark pod shop/" + newPod.Name + " Running", func(ctx context.Context, client kubernetes.Interface) error {
			p, err := client.CoreV1().Pods("shop").Get(ctx, newPod.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Status.Phase = corev1.PodRunning
			_, err = client.CoreV1().Pods("shop").UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: "tour"})
			return err
		}},
		{"delete pod shop/web-6d9f7c8b5-x9c2p", func(ctx context.Context, client kubernetes.Interface) error {
			return client.CoreV1().Pods("shop").Delete(ctx, "web-6d9f7c8b5-x9c2p", metav1.DeleteOptions{})
		}},
		{"set LOG_LEVEL=debug in configmap shop/web-config", func(ctx context.Context, client kubernetes.Interface) error {
			cm, err := client.CoreV1().ConfigMaps("shop").Get(ctx, "web-config", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cm.Data["LOG_LEVEL"] = "debug"
			_, err = client.CoreV1().ConfigMaps("shop").Update(ctx, cm, metav1.UpdateOptions{FieldManager: "tour"})
			return err
		}},
		{"create configmap payments/feature-flags", func(ctx context.Context, client kubernetes.Interface) error {
			cm := configMap("payments", "feature-flags", map[string]string{"NEW_CHECKOUT": "true"})
			_, err := client.CoreV1().ConfigMaps("payments").Create(ctx, cm, metav1.CreateOptions{FieldManager: "tour"})
			return err
		}},
		{"delete configmap monitoring/alert-rules", func(ctx context.Context, client kubernetes.Interface) error {
			return client.CoreV1().ConfigMaps("monitoring").Delete(ctx, "alert-rules", metav1.DeleteOptions{})
		}},
	}
}

func namespace(name, team string) *corev1.Namespace {
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/metadata.name": name,
			"team":                        team,
		}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
}

func node(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname": name,
			"kubernetes.io/os":       "linux",
		}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

func deployment(ns, name, _, image string, replicas, ready int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: demoUID(ns, name), Labels: map[string]string{"app": name}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptrTo(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: image}}},
			},
		},
		Status: appsv1.DeploymentStatus{Replicas: replicas, ReadyReplicas: ready, AvailableReplicas: ready, UpdatedReplicas: replicas},
	}
}

// pod is a pod of Deployment app as its ReplicaSet app-hash names it.
func pod(ns, app, hash, suffix string, phase corev1.PodPhase, nodeName string) *corev1.Pod {
	replicaSet := app + "-" + hash
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			Name:      replicaSet + "-" + suffix,
			UID:       demoUID(ns, replicaSet+"-"+suffix),
			Labels:    map[string]string{"app": app, "pod-template-hash": hash},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: replicaSet,
				Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true),
			}},
			// What a real server records: who set which fields. Nothing in
			// the tour reads them; the lean cache drops them.
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1"},
				{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Subresource: "status"},
			},
		},
		Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{{Name: app, Image: "ghcr.io/example/" + app}},
		},
		Status: corev1.PodStatus{Phase: phase},
	}
}

func service(ns, name, app, clusterIP string, port, targetPort int32) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: clusterIP,
			Selector:  map[string]string{"app": app},
			Ports: []corev1.ServicePort{{
				Name: fmt.Sprintf("port-%d", port), Protocol: corev1.ProtocolTCP,
				Port: port, TargetPort: intstr.FromInt32(targetPort),
			}},
		},
	}
}

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

// demoUID is the UID of an object of the demo cluster, fixed so that the
// sharding section, which hashes UIDs, prints the same every run. A real
// server assigns random ones.
func demoUID(ns, name string) types.UID {
	h := fnv.New64a()
	h.Write([]byte(ns + "/" + name))
	sum := h.Sum64()
	return types.UID(fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x",
		uint32(sum>>32), uint16(sum>>16), uint16(sum)&0xfff, uint16(sum>>4)&0xfff, sum&0xffffffffffff))
}

func ptrTo[T any](v T) *T { return &v }
