package manager

import (
	"sync"

	"github.com/berth-io/berth/internal/container"
)

// templateCache holds the templates creates were built from, by name, so
// that a create need not read its template first: it hands the cached copy
// to the store (store.CreateParams.Template), whose create transaction
// checks that the stored template is still exactly that copy. A copy that
// is stale (the template was replaced or deleted, maybe by another process)
// costs one refused transaction, after which the create reads the template
// again. Templates are few (admins publish them), so nothing is evicted
// but what turns out stale.
type templateCache struct {
	mu sync.Mutex
	m  map[string]container.Template
}

func (c *templateCache) get(name string) (container.Template, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.m[name]
	return t, ok
}

func (c *templateCache) put(t container.Template) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]container.Template{}
	}
	c.m[t.Name] = t
}

func (c *templateCache) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, name)
}
