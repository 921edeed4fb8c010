// Package testbed is pi2hop's lab: it builds client and server network
// namespaces joined through a live hop (topology.NewPair), runs real L4S and
// classic traffic between them with the endpoints of package flow, and
// turns what they saw into the figures docs/design.md defines (package
// metrics) and a report (package report).
//
// A scenario is a definition in code (scenario.go) with documented
// defaults; Config holds every knob a flag can override. Run executes a
// scenario run by run, each in fresh namespaces that are always torn down,
// also when ctx is cancelled.
package testbed
