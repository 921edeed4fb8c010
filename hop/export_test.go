package hop

// The root tests that run a hop between two namespaces (tunpair's ends)
// are in package hop_test, as a user of the package; these share the
// checks of the package's own tests with them.
var (
	TestConfig   = testConfig
	CheckBalance = checkBalance
)
