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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// demoObjects is the in-memory cluster the quickstart runs on without a
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
// the quickstart's handlers.
type change struct {
	what string
	do   func(ctx context.Context, client kubernetes.Interface) error
}

// demoChanges is what the quickstart does to the demo cluster once the
// caches are in sync: a rollout replaces a pending web pod, an operator
// raises the log level, a feature flag appears and old alert rules go.
func demoChanges() []change {
	newPod := pod("shop", "web", "6d9f7c8b5", "h4j5k", corev1.PodPending, "node-b")
	return []change{
		{"create pod shop/" + newPod.Name, func(ctx context.Context, client kubernetes.Interface) error {
			_, err := client.CoreV1().Pods("shop").Create(ctx, newPod, metav1.CreateOptions{FieldManager: "quickstart"})
			return err
		}},
		{"mark pod shop/" + newPod.Name + " Running", func(ctx context.Context, client kubernetes.Interface) error {
			p, err := client.CoreV1().Pods("shop").Get(ctx, newPod.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Status.Phase = corev1.PodRunning
			_, err = client.CoreV1().Pods("shop").UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: "quickstart"})
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
			_, err = client.CoreV1().ConfigMaps("shop").Update(ctx, cm, metav1.UpdateOptions{FieldManager: "quickstart"})
			return err
		}},
		{"create configmap payments/feature-flags", func(ctx context.Context, client kubernetes.Interface) error {
			cm := configMap("payments", "feature-flags", map[string]string{"NEW_CHECKOUT": "true"})
			_, err := client.CoreV1().ConfigMaps("payments").Create(ctx, cm, metav1.CreateOptions{FieldManager: "quickstart"})
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
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
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
			Labels:    map[string]string{"app": app, "pod-template-hash": hash},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: replicaSet,
				Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true),
			}},
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

func ptrTo[T any](v T) *T { return &v }
