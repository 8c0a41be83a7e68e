package engine

import (
	"errors"

	"github.com/kord-fss/kord/module/store"
)

type failStore struct{}

func (failStore) Load() (store.Counters, error) { return store.Counters{}, nil }
func (failStore) Save(store.Counters) error     { return errors.New("disk full") }
