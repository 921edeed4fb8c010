package tun

// OpenInBackend is OpenIn with a chosen backend (see OpenBackend).
func OpenInBackend(ns, name string, mtu int, b Backend) (Device, error) {
	var d Device
	err := Do(ns, func() error {
		var err error
		d, err = OpenBackend(name, mtu, b)
		return err
	})
	return d, err
}

// OpenTUNBackend is OpenTUN with a chosen backend (see OpenBackend).
func (j *Journal) OpenTUNBackend(ns, name string, mtu int, b Backend) (Device, error) {
	forget, err := j.record(Entry{Kind: KindLink, NS: ns, Name: name})
	if err != nil {
		return nil, err
	}
	d, err := OpenInBackend(ns, name, mtu, b)
	if err != nil {
		forget()
	}
	return d, err
}
