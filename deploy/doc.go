// Package deploy holds kord's container image (Dockerfile) and its Helm
// chart (helm/kord) for Kubernetes, in a Go module of its own so that the
// main module does not depend on Helm or the Kubernetes API. Its test
// renders the chart with Helm's Go SDK and checks what it renders
// (chart_test.go); .ci/run runs it.
package deploy
