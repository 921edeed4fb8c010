package figure_test

import (
	"fmt"

	"github.com/pi2hop/pi2hop/figure"
)

// The p99 of 100 samples is the 99th smallest, not the largest.
func ExampleQuantile() {
	rtts := make([]float64, 100) // ms, sorted
	for i := range rtts {
		rtts[i] = float64(20 + i)
	}
	fmt.Println(figure.Quantile(rtts, 0.50), figure.Quantile(rtts, 0.99), figure.Quantile(rtts, 1))
	// Output: 69 118 119
}
