// Package imagetest checks make image end to end: a dockerd of the
// test's own (own data root, no firewall rules, no bridge) builds the
// image, runs it and is stopped again. It holds only that test.
package imagetest
