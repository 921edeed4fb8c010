package hop

// The root tests that run a hop between two namespaces (topology.Pair)
// are in package hop_test, since topology imports hop; these share the
// checks of the package's own tests with them.
var (
	TestConfig   = testConfig
	CheckBalance = checkBalance
)
