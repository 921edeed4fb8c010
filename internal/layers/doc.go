// Package layers holds the test that keeps imports pointing down the
// package table of docs/design.md ("Layers"): the table is the source, the
// import graph (go list -deps -test, tests included) is checked against
// it.
package layers
