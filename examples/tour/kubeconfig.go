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
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeinformers/informers"
)

// realCluster is the cluster of a kubeconfig, read-only. NewForConfig
// builds the typed, dynamic and metadata clients from one rest.Config.
func realCluster(kubeconfig string) (cluster, error) {
	config, contextName, err := loadKubeconfig(kubeconfig)
	if err != nil {
		return cluster{}, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	config.UserAgent = "kubeinformers-tour"
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return cluster{}, err
	}
	return cluster{
		name:        fmt.Sprintf("%s (context %q), read-only", config.Host, contextName),
		constructor: "informers.NewForConfig",
		client:      client,
		q:           clusterQueries,
		newFactory: func(options ...informers.SharedInformerOption) (informers.Factory, error) {
			return informers.NewForConfig(config, 0, options...)
		},
	}, nil
}

// loadKubeconfig builds a client configuration the way kubectl does: from
// the explicit file if given, or else from the files listed in $KUBECONFIG,
// merged. It returns the configuration and the name of the context used.
func loadKubeconfig(explicit string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = explicit
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading kubeconfig: %w", err)
	}
	config, err := loader.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig context %q: %w", raw.CurrentContext, err)
	}
	return config, raw.CurrentContext, nil
}
