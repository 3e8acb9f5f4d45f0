package scoperun

// onRelease registers what release undoes: each phase registers what it
// took (the temporary directory, a lease, the state server, the backend
// override) as it takes it.
func (r *runner) onRelease(f func()) { r.releases = append(r.releases, f) }

// release is the last phase, run however the run ends (an error, an
// interrupt, a panic unwinding it): it undoes what the phases took, in the
// reverse order of taking.
func (r *runner) release() {
	for i := len(r.releases) - 1; i >= 0; i-- {
		r.releases[i]()
	}
}
