package agent

import "github.com/soba-agent/soba-lsp/session"

// History returns the entries of the session's leaf path, root first: what
// a front end replays when a client loads the session (ACP session/load).
func (a *Agent) History() ([]session.Entry, error) {
	var out []session.Entry
	var ferr error
	err := a.do(func(st *state) {
		for _, m := range st.store.Path() {
			e, err := st.store.Load(m.ID)
			if err != nil {
				ferr = err
				return
			}
			out = append(out, e)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, ferr
}
