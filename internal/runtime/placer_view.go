package runtime

import (
	"context"
	"sync"
	"time"
)

// lockView returns the view's listing with p.view.mu held, refreshed when
// it is older than ViewTTL. One refresh runs at a time: the caller that
// finds the listing too old starts one and waits for it; callers that come
// while it runs use the listing it replaces if that is younger than twice
// the TTL, else wait for it too (the first listing, or one from before a
// quiet spell). A caller whose ctx ends while it waits gets ctx's error
// (the refresh goes on for the others).
func (p *Placer[N, O]) lockView(ctx context.Context) (*listing, error) {
	v := &p.view
	v.mu.Lock()
	l := v.last
	ttl := p.ViewTTL
	if ttl <= 0 {
		ttl = DefaultViewTTL
	}
	var age time.Duration
	if l != nil {
		age = p.now().Sub(l.began)
	}
	switch {
	case l != nil && age < ttl:
		return l, nil
	case v.refreshing == nil:
		v.refreshing = make(chan struct{})
		go p.refresh(context.WithoutCancel(ctx), v.refreshing)
	case l != nil && age < 2*ttl:
		return l, nil
	}
	done := v.refreshing
	v.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	v.mu.Lock()
	return v.last, nil
}

// refresh lists every node's load (viewFanout at a time, within
// viewTimeout), makes it the view's listing, drops the places it has seen,
// and closes done.
func (p *Placer[N, O]) refresh(ctx context.Context, done chan struct{}) {
	ctx, cancel := context.WithTimeout(ctx, viewTimeout)
	defer cancel()
	l := &listing{began: p.now(), active: make(map[string]int, len(p.Nodes)), errs: map[string]error{}}
	counts := make([]int, len(p.Nodes))
	errs := make([]error, len(p.Nodes))
	sem := make(chan struct{}, viewFanout)
	var wg sync.WaitGroup
	for i, n := range p.Nodes {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			counts[i], errs[i] = p.Count(ctx, n)
		})
	}
	wg.Wait()
	for i, n := range p.Nodes {
		if errs[i] != nil {
			l.errs[n.NodeName()] = errs[i]
		} else {
			l.active[n.NodeName()] = counts[i]
		}
	}
	hold := p.PlaceHold
	if hold <= 0 {
		hold = DefaultPlaceHold
	}
	v := &p.view
	v.mu.Lock()
	v.last, v.refreshing = l, nil
	v.prune(l.began, p.now(), hold)
	v.mu.Unlock()
	close(done)
}

// now is p.Now, or time.Now.
func (p *Placer[N, O]) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}
