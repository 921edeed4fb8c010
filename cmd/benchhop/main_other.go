//go:build !linux

package main

import (
	"fmt"
	"os"
)

// benchhop compares the hop with Linux's own router in network
// namespaces: elsewhere there is nothing to measure.
func main() {
	fmt.Fprintln(os.Stderr, "benchhop: needs Linux (TUN devices, network namespaces, the kernel router to compare with)")
	os.Exit(2)
}
