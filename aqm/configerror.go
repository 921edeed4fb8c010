package aqm

// checkRanges returns the first row of a Validate table whose value is
// out of its range, as the *ConfigError Validate returns, or nil.
func checkRanges(rows []ConfigError) error {
	for _, r := range rows {
		if r.Value < r.Min || r.Value > r.Max {
			return &r
		}
	}
	return nil
}
